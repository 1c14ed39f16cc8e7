! Fortran 2008 bindings (use mpi_f08) of Open MPI go through ompi_*_f, a separate entry
! point from mpif.h's mpi_*_: the shim must see these collectives too, exactly once.
program shim_test_f08
  use mpi_f08
  implicit none
  integer :: rank, nprocs, failures
  integer, allocatable :: a(:), b(:)

  failures = 0
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  allocate(a(4 * nprocs), b(4 * nprocs))
  a = rank

  call expect('f08-a2a', 'alltoall', 4 * 4)
  call MPI_Alltoall(a, 4, MPI_INTEGER, b, 4, MPI_INTEGER, MPI_COMM_WORLD)
  if (b(4 * nprocs) /= nprocs - 1) failures = failures + 1

  call expect('f08-bcast', 'bcast', 4 * 4)
  call MPI_Bcast(a, 4, MPI_INTEGER, 0, MPI_COMM_WORLD)
  if (a(1) /= 0) failures = failures + 1

  call expect('f08-barrier', 'barrier', 0)
  call MPI_Barrier(MPI_COMM_WORLD)
  write(0, '(a,i0,a,i0)') 'gp-test: rank=', rank, ' done failures=', failures
  flush(0)
  call MPI_Finalize()
  if (failures /= 0) stop 1

contains

  subroutine expect(tag, kind, bytes)
    character(len=*), intent(in) :: tag, kind
    integer, intent(in) :: bytes
    write(0, '(a,i0,a,a,a,a,a,i0,a,i0)') 'gp-test: rank=', rank, ' expect tag=', tag, &
      ' kind=', kind, ' flags=0 bytes=', bytes, ' comm_size=', nprocs
    flush(0)
  end subroutine

end program shim_test_f08
