! Fortran test of libgapctl-mpi.so (Open MPI): the mpif.h bindings call PMPI_* directly,
! so only the shim's Fortran wrappers can see these collectives. Prints the same
! "expect" lines as shim_test.c; run_shim_test.py checks them against the shim's log.
program shim_test_f77
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, nprocs, i, failures
  integer, allocatable :: a(:), b(:), counts(:), displs(:)
  integer :: x, s
  double precision :: d(16)

  failures = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  allocate(a(16 * nprocs), b(16 * nprocs), counts(nprocs), displs(nprocs))

  a = rank
  call expect(rank, 'f-a2a', 'alltoall', 0, 8 * 4, nprocs)
  call MPI_ALLTOALL(a, 8, MPI_INTEGER, b, 8, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  if (b(8 * (nprocs - 1) + 1) /= nprocs - 1) failures = failures + 1

  x = rank
  call expect(rank, 'f-ar', 'allreduce', 0, 4, nprocs)
  call MPI_ALLREDUCE(x, s, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (s /= nprocs * (nprocs - 1) / 2) failures = failures + 1

  ! In place: the send count and type are not significant.
  b = 1
  call expect(rank, 'f-ar-inplace', 'allreduce', 0, 3 * 4, nprocs)
  call MPI_ALLREDUCE(MPI_IN_PLACE, b, 3, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (b(3) /= nprocs) failures = failures + 1

  d = 0
  if (rank == 0) d = 2.5d0
  call expect(rank, 'f-bcast', 'bcast', 0, 16 * 8, nprocs)
  call MPI_BCAST(d, 16, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  if (d(16) /= 2.5d0) failures = failures + 1

  call expect(rank, 'f-barrier', 'barrier', 0, 0, nprocs)
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)

  call expect(rank, 'f-ag', 'allgather', 0, 2 * 4, nprocs)
  call MPI_ALLGATHER(a, 2, MPI_INTEGER, b, 2, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  if (b(2 * nprocs) /= nprocs - 1) failures = failures + 1

  call expect(rank, 'f-reduce', 'reduce', 0, 4 * 4, nprocs)
  call MPI_REDUCE(a, b, 4, MPI_INTEGER, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0 .and. b(1) /= nprocs - 1) failures = failures + 1

  call expect(rank, 'f-gather', 'gather', 0, 4, nprocs)
  call MPI_GATHER(rank, 1, MPI_INTEGER, b, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0 .and. b(nprocs) /= nprocs - 1) failures = failures + 1

  ! What rank r sends to q equals what q expects from r: r + q + 1 integers.
  do i = 1, nprocs
    counts(i) = rank + i
    displs(i) = (i - 1) * 16
  end do
  call expect(rank, 'f-a2av', 'alltoall', 1, 4 * maxother(counts, nprocs, rank), nprocs)
  call MPI_ALLTOALLV(a, counts, displs, MPI_INTEGER, b, counts, displs, MPI_INTEGER, &
                     MPI_COMM_WORLD, ierr)

  call expect(rank, 'f-final', 'barrier', 0, 0, nprocs)
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  write(0, '(a,i0,a,i0)') 'gp-test: rank=', rank, ' done failures=', failures
  flush(0)
  call MPI_FINALIZE(ierr)
  if (failures /= 0) stop 1

contains

  integer function maxother(v, n, self)
    integer, intent(in) :: n, self, v(n)
    integer :: j
    maxother = 0
    do j = 1, n
      if (j - 1 /= self .and. v(j) > maxother) maxother = v(j)
    end do
  end function

  subroutine expect(r, tag, kind, flags, bytes, csize)
    integer, intent(in) :: r, flags, bytes, csize
    character(len=*), intent(in) :: tag, kind
    write(0, '(a,i0,a,a,a,a,a,i0,a,i0,a,i0)') 'gp-test: rank=', r, ' expect tag=', tag, &
      ' kind=', kind, ' flags=', flags, ' bytes=', bytes, ' comm_size=', csize
    flush(0)
  end subroutine

end program shim_test_f77
