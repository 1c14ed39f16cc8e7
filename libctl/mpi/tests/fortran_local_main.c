/* Loads a Fortran library with dlopen(RTLD_LOCAL), as a Python extension is loaded, and has
 * it call MPI_ALLREDUCE under the shim: every rank must get ierr 0 and the sum of ones.
 * The shim's Fortran wrappers forward to Open MPI's ompi_*_f, which RTLD_NEXT cannot see
 * from a local scope (they answered MPI_ERR_INTERN and skipped the call).
 * usage: gapctl_mpi_fortran_local LIBRARY.so */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	int rank, size, ierr = -1, total = -1;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	void *lib = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
	void (*allreduce)(int *, int *) = lib ? (void (*)(int *, int *))dlsym(lib, "gp_local_allreduce") : NULL;
	if (!allreduce) {
		fprintf(stderr, "fortran-local rank=%d: cannot load %s: %s\n", rank, argc > 1 ? argv[1] : "(none)",
			dlerror());
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	allreduce(&ierr, &total);
	printf("fortran-local rank=%d ierr=%d sum=%d (want 0 and %d)\n", rank, ierr, total, size);
	fflush(stdout);
	const int ok = ierr == MPI_SUCCESS && total == size;
	MPI_Finalize();
	return ok ? 0 : 1;
}
