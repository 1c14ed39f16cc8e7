// bytes_per_peer of each collective, from the arguments MPI declares significant at this
// process only (an insignificant datatype may be garbage, and asking MPI about it would
// invoke the error handler). Shared by the C and the Fortran wrappers.
#pragma once
#include <algorithm>

#include "shim.hpp"

namespace gp::mpishim {

// The largest counts[i] * size(type) over the other ranks (the VECTOR hint's value).
template <class Count>
uint64_t max_peer_bytes(const CommState &cs, const Count *counts, MPI_Datatype type) noexcept
{
	if (!counts)
		return 0;
	int64_t largest = 0;
	for (int i = 0; i < cs.size; i++)
		if (i != cs.rank)
			largest = std::max<int64_t>(largest, counts[i]);
	return type_bytes(largest, type);
}

// As above with a datatype per rank (alltoallw); each type is looked up once.
template <class Count, class TypeOf>
uint64_t max_peer_bytes_w(const CommState &cs, const Count *counts, TypeOf type_of) noexcept
{
	if (!counts)
		return 0;
	uint64_t largest = 0;
	for (int i = 0; i < cs.size; i++)
		if (i != cs.rank && counts[i] > 0)
			largest = std::max(largest, type_bytes(counts[i], type_of(i)));
	return largest;
}

// Rooted gathers: the root receives a block from each rank (recv side; the send side may
// be MPI_IN_PLACE there), the others send one block to the root.
inline uint64_t gather_bytes(const CommState &cs, int root, int sendcount, MPI_Datatype sendtype,
			     int recvcount, MPI_Datatype recvtype) noexcept
{
	return cs.rank == root ? type_bytes(recvcount, recvtype) : type_bytes(sendcount, sendtype);
}

// Rooted scatters: the root sends a block to each rank (its recvbuf may be MPI_IN_PLACE).
inline uint64_t scatter_bytes(const CommState &cs, int root, int sendcount, MPI_Datatype sendtype,
			      int recvcount, MPI_Datatype recvtype) noexcept
{
	return cs.rank == root ? type_bytes(sendcount, sendtype) : type_bytes(recvcount, recvtype);
}

// The phase around one forwarded call; Bytes is evaluated only when the phase is hinted.
template <class Bytes, class Call>
inline int run_blocking(MPI_Comm comm, uint32_t kind, uint32_t flags, Bytes bytes, Call call)
{
	CommState *cs = shim_on() ? comm_enter(comm) : nullptr;
	if (!cs)
		return call();
	const Phase phase = phase_begin(*cs, kind, flags, bytes(*cs));
	const int rc = call();
	phase_end(phase);
	return rc;
}

} // namespace gp::mpishim
