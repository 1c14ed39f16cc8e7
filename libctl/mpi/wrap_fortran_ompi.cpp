// Open MPI's Fortran bindings (libmpi_mpifh: mpif.h and `use mpi`; libmpi_usempif08 calls
// the same ompi_*_f entry points) call PMPI_* directly, so the C wrappers never see a
// Fortran program's collectives. These wrappers take the Fortran symbols themselves: begin,
// forward to the next definition (dlsym(RTLD_NEXT)), end. Every spelling a compiler may use
// (mpi_x, mpi_x_, mpi_x__, MPI_X) and the internal ompi_x_f are aliases of one function, as
// they are in Open MPI, so no path is counted twice.
//
// Built only into the Open MPI shim: MPICH's Fortran calls the C MPI_* symbols, which the C
// wrappers already cover (defining these there would count each call twice).
#include <dlfcn.h>

#include "collective_bytes.hpp"

using namespace gp::mpishim;

namespace {

// A symbol of Open MPI's Fortran library where the global scope has none: a program that
// dlopen()ed Fortran code with RTLD_LOCAL (a Python extension, a plugin) has it loaded, but
// neither RTLD_NEXT nor RTLD_DEFAULT searches a local scope. Its own handle does.
void *mpifh_symbol(const char *name)
{
	for (const char *library : {"libmpi_mpifh.so.40", "libmpi_mpifh.so"}) {
		void *handle = dlopen(library, RTLD_LAZY | RTLD_NOLOAD);
		if (!handle)
			continue;
		void *symbol = dlsym(handle, name);
		dlclose(handle); // NOLOAD took a reference of its own
		if (symbol)
			return symbol;
	}
	return nullptr;
}

template <class Fn> Fn next_symbol(std::atomic<void *> &cache, const char *name)
{
	void *fn = cache.load(std::memory_order_acquire);
	if (!fn) {
		fn = dlsym(RTLD_NEXT, name);
		if (!fn)
			fn = mpifh_symbol(name);
		cache.store(fn, std::memory_order_release);
	}
	return reinterpret_cast<Fn>(fn);
}

// Open MPI's f2c returns NULL (not MPI_*_NULL) for an index it does not know.
MPI_Comm comm_of(const MPI_Fint *handle)
{
	if (!handle)
		return MPI_COMM_NULL;
	MPI_Comm comm = PMPI_Comm_f2c(*handle);
	return comm ? comm : MPI_COMM_NULL;
}

MPI_Datatype type_of(const MPI_Fint *handle)
{
	if (!handle)
		return MPI_DATATYPE_NULL;
	MPI_Datatype type = PMPI_Type_f2c(*handle);
	return type ? type : MPI_DATATYPE_NULL;
}

int value_of(const MPI_Fint *v) { return v ? *v : 0; }

// Fortran's MPI_IN_PLACE is the address of a common block; Open MPI accepts any of the
// symbol spellings compilers use for it.
void *global_or_mpifh(const char *name)
{
	void *symbol = dlsym(RTLD_DEFAULT, name);
	return symbol ? symbol : mpifh_symbol(name);
}

bool fortran_in_place(const void *buf)
{
	static void *const candidates[] = {
		global_or_mpifh("mpi_fortran_in_place_"),
		global_or_mpifh("mpi_fortran_in_place"),
		global_or_mpifh("mpi_fortran_in_place__"),
		global_or_mpifh("MPI_FORTRAN_IN_PLACE"),
	};
	for (void *c : candidates)
		if (c && c == buf)
			return true;
	return false;
}

void set_error(MPI_Fint *ierr)
{
	if (ierr)
		*ierr = MPI_ERR_INTERN;
}

// Runs the forwarded Fortran call (which reports through ierr) inside a phase.
template <class Bytes, class Call>
void fortran_phase(const MPI_Fint *comm, uint32_t kind, uint32_t flags, Bytes bytes, Call call)
{
	run_blocking(comm_of(comm), kind, flags, bytes, [&] {
		call();
		return 0;
	});
}

} // namespace

using F = MPI_Fint;

#define GP_F_ALIAS(impl, name) \
	extern "C" GP_SHIM_EXPORT decltype(impl) name __attribute__((alias(#impl)));
#define GP_F_ALIASES(impl, lower, upper)                                                   \
	GP_F_ALIAS(impl, lower)                                                            \
	GP_F_ALIAS(impl, lower##_)                                                         \
	GP_F_ALIAS(impl, lower##__)                                                        \
	GP_F_ALIAS(impl, upper)

// Declares the cache of the next definition of ompi_<name>_f and fetches it into `next`.
#define GP_F_NEXT(type, name)                                                              \
	static std::atomic<void *> next_cache{nullptr};                                   \
	const auto next = next_symbol<type>(next_cache, "ompi_" #name "_f");              \
	if (!next) {                                                                       \
		set_error(ierr);                                                           \
		return;                                                                    \
	}

extern "C" {

/* ---- lifecycle ---- */

__attribute__((visibility("hidden"))) void gp_f_init(F *ierr)
{
	using Fn = void (*)(F *);
	GP_F_NEXT(Fn, init);
	next(ierr);
	if (ierr && *ierr == MPI_SUCCESS)
		shim_start();
}

__attribute__((visibility("hidden"))) void gp_f_init_thread(F *required, F *provided, F *ierr)
{
	using Fn = void (*)(F *, F *, F *);
	GP_F_NEXT(Fn, init_thread);
	next(required, provided, ierr);
	if (ierr && *ierr == MPI_SUCCESS)
		shim_start();
}

__attribute__((visibility("hidden"))) void gp_f_finalize(F *ierr)
{
	using Fn = void (*)(F *);
	GP_F_NEXT(Fn, finalize);
	shim_stop();
	next(ierr);
}

/* ---- blocking collectives ---- */

__attribute__((visibility("hidden"))) void gp_f_barrier(F *comm, F *ierr)
{
	using Fn = void (*)(F *, F *);
	GP_F_NEXT(Fn, barrier);
	fortran_phase(
		comm, GAPCTL_KIND_BARRIER, 0, [](const CommState &) { return uint64_t{0}; },
		[&] { next(comm, ierr); });
}

__attribute__((visibility("hidden"))) void gp_f_bcast(char *buf, F *count, F *type, F *root,
						       F *comm, F *ierr)
{
	using Fn = void (*)(char *, F *, F *, F *, F *, F *);
	GP_F_NEXT(Fn, bcast);
	fortran_phase(
		comm, GAPCTL_KIND_BCAST, 0,
		[&](const CommState &) { return type_bytes(value_of(count), type_of(type)); },
		[&] { next(buf, count, type, root, comm, ierr); });
}

__attribute__((visibility("hidden"))) void gp_f_alltoall(char *sendbuf, F *sendcount, F *sendtype,
							  char *recvbuf, F *recvcount, F *recvtype,
							  F *comm, F *ierr)
{
	using Fn = void (*)(char *, F *, F *, char *, F *, F *, F *, F *);
	GP_F_NEXT(Fn, alltoall);
	fortran_phase(
		comm, GAPCTL_KIND_ALLTOALL, 0,
		[&](const CommState &) { return type_bytes(value_of(recvcount), type_of(recvtype)); },
		[&] { next(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, ierr); });
}

__attribute__((visibility("hidden"))) void gp_f_allgather(char *sendbuf, F *sendcount,
							   F *sendtype, char *recvbuf, F *recvcount,
							   F *recvtype, F *comm, F *ierr)
{
	using Fn = void (*)(char *, F *, F *, char *, F *, F *, F *, F *);
	GP_F_NEXT(Fn, allgather);
	fortran_phase(
		comm, GAPCTL_KIND_ALLGATHER, 0,
		[&](const CommState &) { return type_bytes(value_of(recvcount), type_of(recvtype)); },
		[&] { next(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, ierr); });
}

__attribute__((visibility("hidden"))) void gp_f_reduce_scatter(char *sendbuf, char *recvbuf,
								F *recvcounts, F *type, F *op,
								F *comm, F *ierr)
{
	using Fn = void (*)(char *, char *, F *, F *, F *, F *, F *);
	GP_F_NEXT(Fn, reduce_scatter);
	fortran_phase(
		comm, GAPCTL_KIND_REDUCE_SCATTER, GAPCTL_F_VECTOR,
		[&](const CommState &cs) { return max_peer_bytes(cs, recvcounts, type_of(type)); },
		[&] { next(sendbuf, recvbuf, recvcounts, type, op, comm, ierr); });
}

__attribute__((visibility("hidden"))) void gp_f_reduce_scatter_block(char *sendbuf, char *recvbuf,
								      F *recvcount, F *type, F *op,
								      F *comm, F *ierr)
{
	using Fn = void (*)(char *, char *, F *, F *, F *, F *, F *);
	GP_F_NEXT(Fn, reduce_scatter_block);
	fortran_phase(
		comm, GAPCTL_KIND_REDUCE_SCATTER, 0,
		[&](const CommState &) { return type_bytes(value_of(recvcount), type_of(type)); },
		[&] { next(sendbuf, recvbuf, recvcount, type, op, comm, ierr); });
}

__attribute__((visibility("hidden"))) void gp_f_allreduce(char *sendbuf, char *recvbuf, F *count,
							   F *type, F *op, F *comm, F *ierr)
{
	using Fn = void (*)(char *, char *, F *, F *, F *, F *, F *);
	GP_F_NEXT(Fn, allreduce);
	fortran_phase(
		comm, GAPCTL_KIND_ALLREDUCE, 0,
		[&](const CommState &) { return type_bytes(value_of(count), type_of(type)); },
		[&] { next(sendbuf, recvbuf, count, type, op, comm, ierr); });
}

__attribute__((visibility("hidden"))) void gp_f_reduce(char *sendbuf, char *recvbuf, F *count,
							F *type, F *op, F *root, F *comm, F *ierr)
{
	using Fn = void (*)(char *, char *, F *, F *, F *, F *, F *, F *);
	GP_F_NEXT(Fn, reduce);
	fortran_phase(
		comm, GAPCTL_KIND_REDUCE, 0,
		[&](const CommState &) { return type_bytes(value_of(count), type_of(type)); },
		[&] { next(sendbuf, recvbuf, count, type, op, root, comm, ierr); });
}

__attribute__((visibility("hidden"))) void gp_f_gather(char *sendbuf, F *sendcount, F *sendtype,
							char *recvbuf, F *recvcount, F *recvtype,
							F *root, F *comm, F *ierr)
{
	using Fn = void (*)(char *, F *, F *, char *, F *, F *, F *, F *, F *);
	GP_F_NEXT(Fn, gather);
	fortran_phase(
		comm, GAPCTL_KIND_GATHER, 0,
		[&](const CommState &cs) {
			return cs.rank == value_of(root)
				       ? type_bytes(value_of(recvcount), type_of(recvtype))
				       : type_bytes(value_of(sendcount), type_of(sendtype));
		},
		[&] { next(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
			   ierr); });
}

__attribute__((visibility("hidden"))) void gp_f_scatter(char *sendbuf, F *sendcount, F *sendtype,
							 char *recvbuf, F *recvcount, F *recvtype,
							 F *root, F *comm, F *ierr)
{
	using Fn = void (*)(char *, F *, F *, char *, F *, F *, F *, F *, F *);
	GP_F_NEXT(Fn, scatter);
	fortran_phase(
		comm, GAPCTL_KIND_SCATTER, 0,
		[&](const CommState &cs) {
			return cs.rank == value_of(root)
				       ? type_bytes(value_of(sendcount), type_of(sendtype))
				       : type_bytes(value_of(recvcount), type_of(recvtype));
		},
		[&] { next(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
			   ierr); });
}

/* ---- blocking v-variants ---- */

__attribute__((visibility("hidden"))) void gp_f_alltoallv(char *sendbuf, F *sendcounts,
							   F *sdispls, F *sendtype, char *recvbuf,
							   F *recvcounts, F *rdispls, F *recvtype,
							   F *comm, F *ierr)
{
	using Fn = void (*)(char *, F *, F *, F *, char *, F *, F *, F *, F *, F *);
	GP_F_NEXT(Fn, alltoallv);
	fortran_phase(
		comm, GAPCTL_KIND_ALLTOALL, GAPCTL_F_VECTOR,
		[&](const CommState &cs) {
			const uint64_t in = max_peer_bytes(cs, recvcounts, type_of(recvtype));
			if (fortran_in_place(sendbuf))
				return in;
			return std::max(in, max_peer_bytes(cs, sendcounts, type_of(sendtype)));
		},
		[&] { next(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
			   recvtype, comm, ierr); });
}

__attribute__((visibility("hidden"))) void gp_f_alltoallw(char *sendbuf, F *sendcounts,
							   F *sdispls, F *sendtypes, char *recvbuf,
							   F *recvcounts, F *rdispls, F *recvtypes,
							   F *comm, F *ierr)
{
	using Fn = void (*)(char *, F *, F *, F *, char *, F *, F *, F *, F *, F *);
	GP_F_NEXT(Fn, alltoallw);
	fortran_phase(
		comm, GAPCTL_KIND_ALLTOALL, GAPCTL_F_VECTOR,
		[&](const CommState &cs) {
			const uint64_t in = max_peer_bytes_w(
				cs, recvcounts, [&](int i) { return type_of(&recvtypes[i]); });
			if (fortran_in_place(sendbuf))
				return in;
			return std::max(in, max_peer_bytes_w(cs, sendcounts, [&](int i) {
						return type_of(&sendtypes[i]);
					}));
		},
		[&] { next(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
			   recvtypes, comm, ierr); });
}

__attribute__((visibility("hidden"))) void gp_f_allgatherv(char *sendbuf, F *sendcount,
							    F *sendtype, char *recvbuf,
							    F *recvcounts, F *displs, F *recvtype,
							    F *comm, F *ierr)
{
	using Fn = void (*)(char *, F *, F *, char *, F *, F *, F *, F *, F *);
	GP_F_NEXT(Fn, allgatherv);
	fortran_phase(
		comm, GAPCTL_KIND_ALLGATHER, GAPCTL_F_VECTOR,
		[&](const CommState &cs) { return max_peer_bytes(cs, recvcounts, type_of(recvtype)); },
		[&] { next(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
			   ierr); });
}

__attribute__((visibility("hidden"))) void gp_f_gatherv(char *sendbuf, F *sendcount, F *sendtype,
							 char *recvbuf, F *recvcounts, F *displs,
							 F *recvtype, F *root, F *comm, F *ierr)
{
	using Fn = void (*)(char *, F *, F *, char *, F *, F *, F *, F *, F *, F *);
	GP_F_NEXT(Fn, gatherv);
	fortran_phase(
		comm, GAPCTL_KIND_GATHER, GAPCTL_F_VECTOR,
		[&](const CommState &cs) {
			return cs.rank == value_of(root)
				       ? max_peer_bytes(cs, recvcounts, type_of(recvtype))
				       : type_bytes(value_of(sendcount), type_of(sendtype));
		},
		[&] { next(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root,
			   comm, ierr); });
}

__attribute__((visibility("hidden"))) void gp_f_scatterv(char *sendbuf, F *sendcounts, F *displs,
							  F *sendtype, char *recvbuf, F *recvcount,
							  F *recvtype, F *root, F *comm, F *ierr)
{
	using Fn = void (*)(char *, F *, F *, F *, char *, F *, F *, F *, F *, F *);
	GP_F_NEXT(Fn, scatterv);
	fortran_phase(
		comm, GAPCTL_KIND_SCATTER, GAPCTL_F_VECTOR,
		[&](const CommState &cs) {
			return cs.rank == value_of(root)
				       ? max_peer_bytes(cs, sendcounts, type_of(sendtype))
				       : type_bytes(value_of(recvcount), type_of(recvtype));
		},
		[&] { next(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root,
			   comm, ierr); });
}

} // extern "C"

GP_F_ALIASES(gp_f_init, mpi_init, MPI_INIT)
GP_F_ALIAS(gp_f_init, ompi_init_f)
GP_F_ALIASES(gp_f_init_thread, mpi_init_thread, MPI_INIT_THREAD)
GP_F_ALIAS(gp_f_init_thread, ompi_init_thread_f)
GP_F_ALIASES(gp_f_finalize, mpi_finalize, MPI_FINALIZE)
GP_F_ALIAS(gp_f_finalize, ompi_finalize_f)
GP_F_ALIASES(gp_f_barrier, mpi_barrier, MPI_BARRIER)
GP_F_ALIAS(gp_f_barrier, ompi_barrier_f)
GP_F_ALIASES(gp_f_bcast, mpi_bcast, MPI_BCAST)
GP_F_ALIAS(gp_f_bcast, ompi_bcast_f)
GP_F_ALIASES(gp_f_alltoall, mpi_alltoall, MPI_ALLTOALL)
GP_F_ALIAS(gp_f_alltoall, ompi_alltoall_f)
GP_F_ALIASES(gp_f_allgather, mpi_allgather, MPI_ALLGATHER)
GP_F_ALIAS(gp_f_allgather, ompi_allgather_f)
GP_F_ALIASES(gp_f_reduce_scatter, mpi_reduce_scatter, MPI_REDUCE_SCATTER)
GP_F_ALIAS(gp_f_reduce_scatter, ompi_reduce_scatter_f)
GP_F_ALIASES(gp_f_reduce_scatter_block, mpi_reduce_scatter_block, MPI_REDUCE_SCATTER_BLOCK)
GP_F_ALIAS(gp_f_reduce_scatter_block, ompi_reduce_scatter_block_f)
GP_F_ALIASES(gp_f_allreduce, mpi_allreduce, MPI_ALLREDUCE)
GP_F_ALIAS(gp_f_allreduce, ompi_allreduce_f)
GP_F_ALIASES(gp_f_reduce, mpi_reduce, MPI_REDUCE)
GP_F_ALIAS(gp_f_reduce, ompi_reduce_f)
GP_F_ALIASES(gp_f_gather, mpi_gather, MPI_GATHER)
GP_F_ALIAS(gp_f_gather, ompi_gather_f)
GP_F_ALIASES(gp_f_scatter, mpi_scatter, MPI_SCATTER)
GP_F_ALIAS(gp_f_scatter, ompi_scatter_f)
GP_F_ALIASES(gp_f_alltoallv, mpi_alltoallv, MPI_ALLTOALLV)
GP_F_ALIAS(gp_f_alltoallv, ompi_alltoallv_f)
GP_F_ALIASES(gp_f_alltoallw, mpi_alltoallw, MPI_ALLTOALLW)
GP_F_ALIAS(gp_f_alltoallw, ompi_alltoallw_f)
GP_F_ALIASES(gp_f_allgatherv, mpi_allgatherv, MPI_ALLGATHERV)
GP_F_ALIAS(gp_f_allgatherv, ompi_allgatherv_f)
GP_F_ALIASES(gp_f_gatherv, mpi_gatherv, MPI_GATHERV)
GP_F_ALIAS(gp_f_gatherv, ompi_gatherv_f)
GP_F_ALIASES(gp_f_scatterv, mpi_scatterv, MPI_SCATTERV)
GP_F_ALIAS(gp_f_scatterv, ompi_scatterv_f)
