! A Fortran MPI call from a library the program dlopen()ed with RTLD_LOCAL (a Python or
! plugin extension): its mpif.h symbols resolve to the preloaded shim, whose forward to
! Open MPI's ompi_allreduce_f must still find it (fortran_local_main.c runs it).
subroutine gp_local_allreduce(ierr, total) bind(C, name="gp_local_allreduce")
  use iso_c_binding
  implicit none
  include 'mpif.h'
  integer(c_int) :: ierr, total
  integer :: e, one, sum
  one = 1
  sum = -1
  call MPI_ALLREDUCE(one, sum, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, e)
  ierr = e
  total = sum
end subroutine
