// C wrappers of the collectives: blocking, nonblocking (MPI_I*) and persistent (MPI-4
// MPI_*_init in MPICH 4, MPIX_*_init of Open MPI's pcollreq extension). Each one calls
// gapctl_phase_begin before forwarding to PMPI_* and ends the phase when the operation
// completes: on return for blocking calls, in the wait/test wrappers (wrap_requests.cpp)
// for the others. The definitions must match mpi.h exactly; the compiler checks that.
#include "collective_bytes.hpp"

#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

using namespace gp::mpishim;

namespace {

template <class Bytes, class Call>
int run_nonblocking(MPI_Comm comm, uint32_t kind, uint32_t flags, Bytes bytes, Call call,
		    MPI_Request *request)
{
	CommState *cs = shim_on() ? comm_enter(comm, false) : nullptr;
	if (!cs)
		return call();
	const Phase phase = phase_begin(*cs, kind, flags | GAPCTL_F_NONBLOCKING, bytes(*cs));
	const int rc = call();
	if (rc == MPI_SUCCESS && request && *request != MPI_REQUEST_NULL)
		track_nonblocking(*request, phase);
	else
		phase_end(phase);
	return rc;
}

// The init call is collective, so it counts toward the communicator's sequence (and may
// run the endpoint exchange); the phases begin at MPI_Start.
template <class Bytes, class Call>
int run_persistent_init(MPI_Comm comm, uint32_t kind, uint32_t flags, Bytes bytes, Call call,
			MPI_Request *request)
{
	CommState *cs = shim_on() ? comm_enter(comm, false) : nullptr;
	const int rc = call();
	if (cs && rc == MPI_SUCCESS && request && *request != MPI_REQUEST_NULL)
		track_persistent(*request, comm_shared(comm), kind, flags | GAPCTL_F_PERSISTENT,
				 bytes(*cs));
	return rc;
}

} // namespace

extern "C" {

/* ---- blocking ---- */

GP_SHIM_EXPORT int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
				void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
	// The receive side is always significant (the send side is not with MPI_IN_PLACE).
	return run_blocking(
		comm, GAPCTL_KIND_ALLTOALL, 0,
		[&](const CommState &) { return type_bytes(recvcount, recvtype); },
		[&] { return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount,
					   recvtype, comm); });
}

GP_SHIM_EXPORT int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
				 void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
	return run_blocking(
		comm, GAPCTL_KIND_ALLGATHER, 0,
		[&](const CommState &) { return type_bytes(recvcount, recvtype); },
		[&] { return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
					    recvtype, comm); });
}

GP_SHIM_EXPORT int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root,
			     MPI_Comm comm)
{
	return run_blocking(
		comm, GAPCTL_KIND_BCAST, 0,
		[&](const CommState &) { return type_bytes(count, datatype); },
		[&] { return PMPI_Bcast(buffer, count, datatype, root, comm); });
}

GP_SHIM_EXPORT int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
				      MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
	// Blocks differ per rank: flagged VECTOR with the largest block.
	return run_blocking(
		comm, GAPCTL_KIND_REDUCE_SCATTER, GAPCTL_F_VECTOR,
		[&](const CommState &cs) { return max_peer_bytes(cs, recvcounts, datatype); },
		[&] { return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op,
						 comm); });
}

GP_SHIM_EXPORT int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
					    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
	return run_blocking(
		comm, GAPCTL_KIND_REDUCE_SCATTER, 0,
		[&](const CommState &) { return type_bytes(recvcount, datatype); },
		[&] { return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op,
						       comm); });
}

GP_SHIM_EXPORT int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count,
				 MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
	return run_blocking(
		comm, GAPCTL_KIND_ALLREDUCE, 0,
		[&](const CommState &) { return type_bytes(count, datatype); },
		[&] { return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm); });
}

GP_SHIM_EXPORT int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
			      void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
			      MPI_Comm comm)
{
	return run_blocking(
		comm, GAPCTL_KIND_GATHER, 0,
		[&](const CommState &cs) {
			return gather_bytes(cs, root, sendcount, sendtype, recvcount, recvtype);
		},
		[&] { return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
					 recvtype, root, comm); });
}

GP_SHIM_EXPORT int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
			       void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
			       MPI_Comm comm)
{
	return run_blocking(
		comm, GAPCTL_KIND_SCATTER, 0,
		[&](const CommState &cs) {
			return scatter_bytes(cs, root, sendcount, sendtype, recvcount, recvtype);
		},
		[&] { return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount,
					  recvtype, root, comm); });
}

GP_SHIM_EXPORT int MPI_Barrier(MPI_Comm comm)
{
	return run_blocking(
		comm, GAPCTL_KIND_BARRIER, 0, [](const CommState &) { return uint64_t{0}; },
		[&] { return PMPI_Barrier(comm); });
}

GP_SHIM_EXPORT int MPI_Reduce(const void *sendbuf, void *recvbuf, int count,
			      MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm)
{
	return run_blocking(
		comm, GAPCTL_KIND_REDUCE, 0,
		[&](const CommState &) { return type_bytes(count, datatype); },
		[&] { return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm); });
}

/* ---- blocking v-variants ---- */

GP_SHIM_EXPORT int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
				 MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
				 const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
	auto bytes = [&](const CommState &cs) {
		const uint64_t in = max_peer_bytes(cs, recvcounts, recvtype);
		return sendbuf == MPI_IN_PLACE ? in
					       : std::max(in, max_peer_bytes(cs, sendcounts, sendtype));
	};
	return run_blocking(comm, GAPCTL_KIND_ALLTOALL, GAPCTL_F_VECTOR, bytes, [&] {
		return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
				      rdispls, recvtype, comm);
	});
}

GP_SHIM_EXPORT int MPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
				 const MPI_Datatype sendtypes[], void *recvbuf,
				 const int recvcounts[], const int rdispls[],
				 const MPI_Datatype recvtypes[], MPI_Comm comm)
{
	auto bytes = [&](const CommState &cs) {
		const uint64_t in = max_peer_bytes_w(cs, recvcounts,
						     [&](int i) { return recvtypes[i]; });
		if (sendbuf == MPI_IN_PLACE)
			return in;
		return std::max(in, max_peer_bytes_w(cs, sendcounts,
						     [&](int i) { return sendtypes[i]; }));
	};
	return run_blocking(comm, GAPCTL_KIND_ALLTOALL, GAPCTL_F_VECTOR, bytes, [&] {
		return PMPI_Alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
				      rdispls, recvtypes, comm);
	});
}

GP_SHIM_EXPORT int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
				  void *recvbuf, const int recvcounts[], const int displs[],
				  MPI_Datatype recvtype, MPI_Comm comm)
{
	return run_blocking(
		comm, GAPCTL_KIND_ALLGATHER, GAPCTL_F_VECTOR,
		[&](const CommState &cs) { return max_peer_bytes(cs, recvcounts, recvtype); },
		[&] { return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
					     displs, recvtype, comm); });
}

GP_SHIM_EXPORT int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
			       void *recvbuf, const int recvcounts[], const int displs[],
			       MPI_Datatype recvtype, int root, MPI_Comm comm)
{
	auto bytes = [&](const CommState &cs) {
		return cs.rank == root ? max_peer_bytes(cs, recvcounts, recvtype)
				       : type_bytes(sendcount, sendtype);
	};
	return run_blocking(comm, GAPCTL_KIND_GATHER, GAPCTL_F_VECTOR, bytes, [&] {
		return PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
				    recvtype, root, comm);
	});
}

GP_SHIM_EXPORT int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
				MPI_Datatype sendtype, void *recvbuf, int recvcount,
				MPI_Datatype recvtype, int root, MPI_Comm comm)
{
	auto bytes = [&](const CommState &cs) {
		return cs.rank == root ? max_peer_bytes(cs, sendcounts, sendtype)
				       : type_bytes(recvcount, recvtype);
	};
	return run_blocking(comm, GAPCTL_KIND_SCATTER, GAPCTL_F_VECTOR, bytes, [&] {
		return PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount,
				     recvtype, root, comm);
	});
}

/* ---- nonblocking ---- */

GP_SHIM_EXPORT int MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
				 void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
				 MPI_Request *request)
{
	return run_nonblocking(
		comm, GAPCTL_KIND_ALLTOALL, 0,
		[&](const CommState &) { return type_bytes(recvcount, recvtype); },
		[&] { return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount,
					    recvtype, comm, request); },
		request);
}

GP_SHIM_EXPORT int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
				  void *recvbuf, int recvcount, MPI_Datatype recvtype,
				  MPI_Comm comm, MPI_Request *request)
{
	return run_nonblocking(
		comm, GAPCTL_KIND_ALLGATHER, 0,
		[&](const CommState &) { return type_bytes(recvcount, recvtype); },
		[&] { return PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
					     recvtype, comm, request); },
		request);
}

GP_SHIM_EXPORT int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root,
			      MPI_Comm comm, MPI_Request *request)
{
	return run_nonblocking(
		comm, GAPCTL_KIND_BCAST, 0,
		[&](const CommState &) { return type_bytes(count, datatype); },
		[&] { return PMPI_Ibcast(buffer, count, datatype, root, comm, request); }, request);
}

GP_SHIM_EXPORT int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf,
				       const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
				       MPI_Comm comm, MPI_Request *request)
{
	return run_nonblocking(
		comm, GAPCTL_KIND_REDUCE_SCATTER, GAPCTL_F_VECTOR,
		[&](const CommState &cs) { return max_peer_bytes(cs, recvcounts, datatype); },
		[&] { return PMPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op,
						  comm, request); },
		request);
}

GP_SHIM_EXPORT int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
					     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
					     MPI_Request *request)
{
	return run_nonblocking(
		comm, GAPCTL_KIND_REDUCE_SCATTER, 0,
		[&](const CommState &) { return type_bytes(recvcount, datatype); },
		[&] { return PMPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op,
							comm, request); },
		request);
}

GP_SHIM_EXPORT int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count,
				  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
				  MPI_Request *request)
{
	return run_nonblocking(
		comm, GAPCTL_KIND_ALLREDUCE, 0,
		[&](const CommState &) { return type_bytes(count, datatype); },
		[&] { return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm,
					     request); },
		request);
}

GP_SHIM_EXPORT int MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
			       void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
			       MPI_Comm comm, MPI_Request *request)
{
	return run_nonblocking(
		comm, GAPCTL_KIND_GATHER, 0,
		[&](const CommState &cs) {
			return gather_bytes(cs, root, sendcount, sendtype, recvcount, recvtype);
		},
		[&] { return PMPI_Igather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
					  recvtype, root, comm, request); },
		request);
}

GP_SHIM_EXPORT int MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
				void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
				MPI_Comm comm, MPI_Request *request)
{
	return run_nonblocking(
		comm, GAPCTL_KIND_SCATTER, 0,
		[&](const CommState &cs) {
			return scatter_bytes(cs, root, sendcount, sendtype, recvcount, recvtype);
		},
		[&] { return PMPI_Iscatter(sendbuf, sendcount, sendtype, recvbuf, recvcount,
					   recvtype, root, comm, request); },
		request);
}

GP_SHIM_EXPORT int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request)
{
	return run_nonblocking(
		comm, GAPCTL_KIND_BARRIER, 0, [](const CommState &) { return uint64_t{0}; },
		[&] { return PMPI_Ibarrier(comm, request); }, request);
}

GP_SHIM_EXPORT int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count,
			       MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
			       MPI_Request *request)
{
	return run_nonblocking(
		comm, GAPCTL_KIND_REDUCE, 0,
		[&](const CommState &) { return type_bytes(count, datatype); },
		[&] { return PMPI_Ireduce(sendbuf, recvbuf, count, datatype, op, root, comm,
					  request); },
		request);
}

GP_SHIM_EXPORT int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[],
				  const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
				  const int recvcounts[], const int rdispls[],
				  MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
	auto bytes = [&](const CommState &cs) {
		const uint64_t in = max_peer_bytes(cs, recvcounts, recvtype);
		return sendbuf == MPI_IN_PLACE ? in
					       : std::max(in, max_peer_bytes(cs, sendcounts, sendtype));
	};
	return run_nonblocking(
		comm, GAPCTL_KIND_ALLTOALL, GAPCTL_F_VECTOR, bytes,
		[&] { return PMPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
					     recvcounts, rdispls, recvtype, comm, request); },
		request);
}

GP_SHIM_EXPORT int MPI_Ialltoallw(const void *sendbuf, const int sendcounts[],
				  const int sdispls[], const MPI_Datatype sendtypes[],
				  void *recvbuf, const int recvcounts[], const int rdispls[],
				  const MPI_Datatype recvtypes[], MPI_Comm comm,
				  MPI_Request *request)
{
	auto bytes = [&](const CommState &cs) {
		const uint64_t in = max_peer_bytes_w(cs, recvcounts,
						     [&](int i) { return recvtypes[i]; });
		if (sendbuf == MPI_IN_PLACE)
			return in;
		return std::max(in, max_peer_bytes_w(cs, sendcounts,
						     [&](int i) { return sendtypes[i]; }));
	};
	return run_nonblocking(
		comm, GAPCTL_KIND_ALLTOALL, GAPCTL_F_VECTOR, bytes,
		[&] { return PMPI_Ialltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
					     recvcounts, rdispls, recvtypes, comm, request); },
		request);
}

GP_SHIM_EXPORT int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
				   void *recvbuf, const int recvcounts[], const int displs[],
				   MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
	return run_nonblocking(
		comm, GAPCTL_KIND_ALLGATHER, GAPCTL_F_VECTOR,
		[&](const CommState &cs) { return max_peer_bytes(cs, recvcounts, recvtype); },
		[&] { return PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
					      displs, recvtype, comm, request); },
		request);
}

GP_SHIM_EXPORT int MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
				void *recvbuf, const int recvcounts[], const int displs[],
				MPI_Datatype recvtype, int root, MPI_Comm comm,
				MPI_Request *request)
{
	auto bytes = [&](const CommState &cs) {
		return cs.rank == root ? max_peer_bytes(cs, recvcounts, recvtype)
				       : type_bytes(sendcount, sendtype);
	};
	return run_nonblocking(
		comm, GAPCTL_KIND_GATHER, GAPCTL_F_VECTOR, bytes,
		[&] { return PMPI_Igatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
					   displs, recvtype, root, comm, request); },
		request);
}

GP_SHIM_EXPORT int MPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[],
				 MPI_Datatype sendtype, void *recvbuf, int recvcount,
				 MPI_Datatype recvtype, int root, MPI_Comm comm,
				 MPI_Request *request)
{
	auto bytes = [&](const CommState &cs) {
		return cs.rank == root ? max_peer_bytes(cs, sendcounts, sendtype)
				       : type_bytes(recvcount, recvtype);
	};
	return run_nonblocking(
		comm, GAPCTL_KIND_SCATTER, GAPCTL_F_VECTOR, bytes,
		[&] { return PMPI_Iscatterv(sendbuf, sendcounts, displs, sendtype, recvbuf,
					    recvcount, recvtype, root, comm, request); },
		request);
}

/* ---- persistent ---- */

#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define GP_PERSISTENT(name) MPIX_##name##_init
#define GP_PPERSISTENT(name) PMPIX_##name##_init
#define GP_HAVE_PERSISTENT 1
#elif MPI_VERSION >= 4
#define GP_PERSISTENT(name) MPI_##name##_init
#define GP_PPERSISTENT(name) PMPI_##name##_init
#define GP_HAVE_PERSISTENT 1
#endif

#ifdef GP_HAVE_PERSISTENT
GP_SHIM_EXPORT int GP_PERSISTENT(Alltoall)(const void *sendbuf, int sendcount,
					   MPI_Datatype sendtype, void *recvbuf, int recvcount,
					   MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
					   MPI_Request *request)
{
	return run_persistent_init(
		comm, GAPCTL_KIND_ALLTOALL, 0,
		[&](const CommState &) { return type_bytes(recvcount, recvtype); },
		[&] { return GP_PPERSISTENT(Alltoall)(sendbuf, sendcount, sendtype, recvbuf,
						      recvcount, recvtype, comm, info, request); },
		request);
}

GP_SHIM_EXPORT int GP_PERSISTENT(Allgather)(const void *sendbuf, int sendcount,
					    MPI_Datatype sendtype, void *recvbuf, int recvcount,
					    MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
					    MPI_Request *request)
{
	return run_persistent_init(
		comm, GAPCTL_KIND_ALLGATHER, 0,
		[&](const CommState &) { return type_bytes(recvcount, recvtype); },
		[&] { return GP_PPERSISTENT(Allgather)(sendbuf, sendcount, sendtype, recvbuf,
						       recvcount, recvtype, comm, info, request); },
		request);
}

GP_SHIM_EXPORT int GP_PERSISTENT(Bcast)(void *buffer, int count, MPI_Datatype datatype, int root,
					MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
	return run_persistent_init(
		comm, GAPCTL_KIND_BCAST, 0,
		[&](const CommState &) { return type_bytes(count, datatype); },
		[&] { return GP_PPERSISTENT(Bcast)(buffer, count, datatype, root, comm, info,
						   request); },
		request);
}

GP_SHIM_EXPORT int GP_PERSISTENT(Reduce_scatter)(const void *sendbuf, void *recvbuf,
						 const int recvcounts[], MPI_Datatype datatype,
						 MPI_Op op, MPI_Comm comm, MPI_Info info,
						 MPI_Request *request)
{
	return run_persistent_init(
		comm, GAPCTL_KIND_REDUCE_SCATTER, GAPCTL_F_VECTOR,
		[&](const CommState &cs) { return max_peer_bytes(cs, recvcounts, datatype); },
		[&] { return GP_PPERSISTENT(Reduce_scatter)(sendbuf, recvbuf, recvcounts,
							    datatype, op, comm, info, request); },
		request);
}

GP_SHIM_EXPORT int GP_PERSISTENT(Reduce_scatter_block)(const void *sendbuf, void *recvbuf,
						       int recvcount, MPI_Datatype datatype,
						       MPI_Op op, MPI_Comm comm, MPI_Info info,
						       MPI_Request *request)
{
	return run_persistent_init(
		comm, GAPCTL_KIND_REDUCE_SCATTER, 0,
		[&](const CommState &) { return type_bytes(recvcount, datatype); },
		[&] { return GP_PPERSISTENT(Reduce_scatter_block)(sendbuf, recvbuf, recvcount,
								  datatype, op, comm, info,
								  request); },
		request);
}

GP_SHIM_EXPORT int GP_PERSISTENT(Allreduce)(const void *sendbuf, void *recvbuf, int count,
					    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
					    MPI_Info info, MPI_Request *request)
{
	return run_persistent_init(
		comm, GAPCTL_KIND_ALLREDUCE, 0,
		[&](const CommState &) { return type_bytes(count, datatype); },
		[&] { return GP_PPERSISTENT(Allreduce)(sendbuf, recvbuf, count, datatype, op, comm,
						       info, request); },
		request);
}

GP_SHIM_EXPORT int GP_PERSISTENT(Gather)(const void *sendbuf, int sendcount,
					 MPI_Datatype sendtype, void *recvbuf, int recvcount,
					 MPI_Datatype recvtype, int root, MPI_Comm comm,
					 MPI_Info info, MPI_Request *request)
{
	return run_persistent_init(
		comm, GAPCTL_KIND_GATHER, 0,
		[&](const CommState &cs) {
			return gather_bytes(cs, root, sendcount, sendtype, recvcount, recvtype);
		},
		[&] { return GP_PPERSISTENT(Gather)(sendbuf, sendcount, sendtype, recvbuf,
						    recvcount, recvtype, root, comm, info,
						    request); },
		request);
}

GP_SHIM_EXPORT int GP_PERSISTENT(Scatter)(const void *sendbuf, int sendcount,
					  MPI_Datatype sendtype, void *recvbuf, int recvcount,
					  MPI_Datatype recvtype, int root, MPI_Comm comm,
					  MPI_Info info, MPI_Request *request)
{
	return run_persistent_init(
		comm, GAPCTL_KIND_SCATTER, 0,
		[&](const CommState &cs) {
			return scatter_bytes(cs, root, sendcount, sendtype, recvcount, recvtype);
		},
		[&] { return GP_PPERSISTENT(Scatter)(sendbuf, sendcount, sendtype, recvbuf,
						     recvcount, recvtype, root, comm, info,
						     request); },
		request);
}

GP_SHIM_EXPORT int GP_PERSISTENT(Barrier)(MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
	return run_persistent_init(
		comm, GAPCTL_KIND_BARRIER, 0, [](const CommState &) { return uint64_t{0}; },
		[&] { return GP_PPERSISTENT(Barrier)(comm, info, request); }, request);
}

GP_SHIM_EXPORT int GP_PERSISTENT(Reduce)(const void *sendbuf, void *recvbuf, int count,
					 MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
					 MPI_Info info, MPI_Request *request)
{
	return run_persistent_init(
		comm, GAPCTL_KIND_REDUCE, 0,
		[&](const CommState &) { return type_bytes(count, datatype); },
		[&] { return GP_PPERSISTENT(Reduce)(sendbuf, recvbuf, count, datatype, op, root,
						    comm, info, request); },
		request);
}

GP_SHIM_EXPORT int GP_PERSISTENT(Alltoallv)(const void *sendbuf, const int sendcounts[],
					    const int sdispls[], MPI_Datatype sendtype,
					    void *recvbuf, const int recvcounts[],
					    const int rdispls[], MPI_Datatype recvtype,
					    MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
	auto bytes = [&](const CommState &cs) {
		const uint64_t in = max_peer_bytes(cs, recvcounts, recvtype);
		return sendbuf == MPI_IN_PLACE ? in
					       : std::max(in, max_peer_bytes(cs, sendcounts, sendtype));
	};
	return run_persistent_init(
		comm, GAPCTL_KIND_ALLTOALL, GAPCTL_F_VECTOR, bytes,
		[&] { return GP_PPERSISTENT(Alltoallv)(sendbuf, sendcounts, sdispls, sendtype,
						       recvbuf, recvcounts, rdispls, recvtype,
						       comm, info, request); },
		request);
}

GP_SHIM_EXPORT int GP_PERSISTENT(Alltoallw)(const void *sendbuf, const int sendcounts[],
					    const int sdispls[], const MPI_Datatype sendtypes[],
					    void *recvbuf, const int recvcounts[],
					    const int rdispls[], const MPI_Datatype recvtypes[],
					    MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
	auto bytes = [&](const CommState &cs) {
		const uint64_t in = max_peer_bytes_w(cs, recvcounts,
						     [&](int i) { return recvtypes[i]; });
		if (sendbuf == MPI_IN_PLACE)
			return in;
		return std::max(in, max_peer_bytes_w(cs, sendcounts,
						     [&](int i) { return sendtypes[i]; }));
	};
	return run_persistent_init(
		comm, GAPCTL_KIND_ALLTOALL, GAPCTL_F_VECTOR, bytes,
		[&] { return GP_PPERSISTENT(Alltoallw)(sendbuf, sendcounts, sdispls, sendtypes,
						       recvbuf, recvcounts, rdispls, recvtypes,
						       comm, info, request); },
		request);
}

GP_SHIM_EXPORT int GP_PERSISTENT(Allgatherv)(const void *sendbuf, int sendcount,
					     MPI_Datatype sendtype, void *recvbuf,
					     const int recvcounts[], const int displs[],
					     MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
					     MPI_Request *request)
{
	return run_persistent_init(
		comm, GAPCTL_KIND_ALLGATHER, GAPCTL_F_VECTOR,
		[&](const CommState &cs) { return max_peer_bytes(cs, recvcounts, recvtype); },
		[&] { return GP_PPERSISTENT(Allgatherv)(sendbuf, sendcount, sendtype, recvbuf,
							recvcounts, displs, recvtype, comm, info,
							request); },
		request);
}

GP_SHIM_EXPORT int GP_PERSISTENT(Gatherv)(const void *sendbuf, int sendcount,
					  MPI_Datatype sendtype, void *recvbuf,
					  const int recvcounts[], const int displs[],
					  MPI_Datatype recvtype, int root, MPI_Comm comm,
					  MPI_Info info, MPI_Request *request)
{
	auto bytes = [&](const CommState &cs) {
		return cs.rank == root ? max_peer_bytes(cs, recvcounts, recvtype)
				       : type_bytes(sendcount, sendtype);
	};
	return run_persistent_init(
		comm, GAPCTL_KIND_GATHER, GAPCTL_F_VECTOR, bytes,
		[&] { return GP_PPERSISTENT(Gatherv)(sendbuf, sendcount, sendtype, recvbuf,
						     recvcounts, displs, recvtype, root, comm,
						     info, request); },
		request);
}

GP_SHIM_EXPORT int GP_PERSISTENT(Scatterv)(const void *sendbuf, const int sendcounts[],
					   const int displs[], MPI_Datatype sendtype,
					   void *recvbuf, int recvcount, MPI_Datatype recvtype,
					   int root, MPI_Comm comm, MPI_Info info,
					   MPI_Request *request)
{
	auto bytes = [&](const CommState &cs) {
		return cs.rank == root ? max_peer_bytes(cs, sendcounts, sendtype)
				       : type_bytes(recvcount, recvtype);
	};
	return run_persistent_init(
		comm, GAPCTL_KIND_SCATTER, GAPCTL_F_VECTOR, bytes,
		[&] { return GP_PPERSISTENT(Scatterv)(sendbuf, sendcounts, displs, sendtype,
						      recvbuf, recvcount, recvtype, root, comm,
						      info, request); },
		request);
}
#endif /* GP_HAVE_PERSISTENT */

} // extern "C"
