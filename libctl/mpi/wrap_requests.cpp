// Lifecycle (MPI_Init*, MPI_Finalize) and the calls that start or complete requests, where
// nonblocking and persistent collective phases begin (MPI_Start*) and end (wait/test).
// When no collective request is tracked, each completion wrapper costs one relaxed load.
#include <cstring>
#include <vector>

#include "shim.hpp"

using namespace gp::mpishim;

namespace {

// The handles as they were before a completion call: MPI overwrites completed
// nonblocking requests with MPI_REQUEST_NULL.
class RequestSnapshot {
public:
	RequestSnapshot(int count, const MPI_Request *requests)
	{
		if (count <= 0 || !requests)
			return;
		count_ = count;
		if (count <= kInline) {
			data_ = inline_;
		} else {
			try {
				heap_.assign(requests, requests + count);
			} catch (...) {
				count_ = 0;
				return;
			}
			data_ = heap_.data();
			return;
		}
		std::memcpy(inline_, requests, sizeof(MPI_Request) * count);
	}
	int size() const { return count_; }
	MPI_Request operator[](int i) const { return data_[i]; }

private:
	static constexpr int kInline = 32;
	MPI_Request inline_[kInline];
	std::vector<MPI_Request> heap_;
	const MPI_Request *data_ = nullptr;
	int count_ = 0;
};

// After a call that completed all the requests (MPI_SUCCESS from Waitall, flag from Testall).
void all_completed(const RequestSnapshot &before)
{
	for (int i = 0; i < before.size(); i++)
		if (before[i] != MPI_REQUEST_NULL)
			request_completed(before[i]);
}

// After an error from Waitall/Testall: only requests MPI nulled are known to be complete.
void nulled_completed(const RequestSnapshot &before, const MPI_Request *after)
{
	for (int i = 0; i < before.size(); i++)
		if (before[i] != MPI_REQUEST_NULL && after[i] == MPI_REQUEST_NULL)
			request_completed(before[i]);
}

void some_completed(const RequestSnapshot &before, int outcount, const int *indices)
{
	if (outcount == MPI_UNDEFINED || !indices)
		return;
	for (int i = 0; i < outcount; i++)
		if (indices[i] >= 0 && indices[i] < before.size())
			request_completed(before[indices[i]]);
}

} // namespace

extern "C" {

GP_SHIM_EXPORT int MPI_Init(int *argc, char ***argv)
{
	const int rc = PMPI_Init(argc, argv);
	if (rc == MPI_SUCCESS)
		shim_start();
	return rc;
}

GP_SHIM_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	const int rc = PMPI_Init_thread(argc, argv, required, provided);
	if (rc == MPI_SUCCESS)
		shim_start();
	return rc;
}

GP_SHIM_EXPORT int MPI_Finalize(void)
{
	shim_stop();
	return PMPI_Finalize();
}

GP_SHIM_EXPORT int MPI_Start(MPI_Request *request)
{
	if (shim_on() && requests_tracked() && request)
		request_started(*request);
	return PMPI_Start(request);
}

GP_SHIM_EXPORT int MPI_Startall(int count, MPI_Request array_of_requests[])
{
	if (shim_on() && requests_tracked() && array_of_requests)
		for (int i = 0; i < count; i++)
			request_started(array_of_requests[i]);
	return PMPI_Startall(count, array_of_requests);
}

GP_SHIM_EXPORT int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
	if (!requests_tracked() || !request)
		return PMPI_Wait(request, status);
	const MPI_Request before = *request;
	const int rc = PMPI_Wait(request, status);
	if (rc == MPI_SUCCESS && before != MPI_REQUEST_NULL)
		request_completed(before);
	return rc;
}

GP_SHIM_EXPORT int MPI_Waitall(int count, MPI_Request array_of_requests[],
			       MPI_Status array_of_statuses[])
{
	if (!requests_tracked())
		return PMPI_Waitall(count, array_of_requests, array_of_statuses);
	const RequestSnapshot before(count, array_of_requests);
	const int rc = PMPI_Waitall(count, array_of_requests, array_of_statuses);
	if (rc == MPI_SUCCESS)
		all_completed(before);
	else if (before.size() == count)
		nulled_completed(before, array_of_requests);
	return rc;
}

GP_SHIM_EXPORT int MPI_Waitany(int count, MPI_Request array_of_requests[], int *index,
			       MPI_Status *status)
{
	if (!requests_tracked())
		return PMPI_Waitany(count, array_of_requests, index, status);
	const RequestSnapshot before(count, array_of_requests);
	const int rc = PMPI_Waitany(count, array_of_requests, index, status);
	if (rc == MPI_SUCCESS && index && *index != MPI_UNDEFINED && *index >= 0 &&
	    *index < before.size())
		request_completed(before[*index]);
	return rc;
}

GP_SHIM_EXPORT int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount,
				int array_of_indices[], MPI_Status array_of_statuses[])
{
	if (!requests_tracked())
		return PMPI_Waitsome(incount, array_of_requests, outcount, array_of_indices,
				     array_of_statuses);
	const RequestSnapshot before(incount, array_of_requests);
	const int rc = PMPI_Waitsome(incount, array_of_requests, outcount, array_of_indices,
				     array_of_statuses);
	// With MPI_ERR_IN_STATUS the indices are still the completed ones.
	if ((rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS) && outcount)
		some_completed(before, *outcount, array_of_indices);
	return rc;
}

GP_SHIM_EXPORT int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
	if (!requests_tracked() || !request)
		return PMPI_Test(request, flag, status);
	const MPI_Request before = *request;
	const int rc = PMPI_Test(request, flag, status);
	if (rc == MPI_SUCCESS && flag && *flag && before != MPI_REQUEST_NULL)
		request_completed(before);
	return rc;
}

GP_SHIM_EXPORT int MPI_Testall(int count, MPI_Request array_of_requests[], int *flag,
			       MPI_Status array_of_statuses[])
{
	if (!requests_tracked())
		return PMPI_Testall(count, array_of_requests, flag, array_of_statuses);
	const RequestSnapshot before(count, array_of_requests);
	const int rc = PMPI_Testall(count, array_of_requests, flag, array_of_statuses);
	if (rc == MPI_SUCCESS && flag && *flag)
		all_completed(before);
	else if (rc != MPI_SUCCESS && before.size() == count)
		nulled_completed(before, array_of_requests);
	return rc;
}

GP_SHIM_EXPORT int MPI_Testany(int count, MPI_Request array_of_requests[], int *index, int *flag,
			       MPI_Status *status)
{
	if (!requests_tracked())
		return PMPI_Testany(count, array_of_requests, index, flag, status);
	const RequestSnapshot before(count, array_of_requests);
	const int rc = PMPI_Testany(count, array_of_requests, index, flag, status);
	if (rc == MPI_SUCCESS && flag && *flag && index && *index != MPI_UNDEFINED &&
	    *index >= 0 && *index < before.size())
		request_completed(before[*index]);
	return rc;
}

GP_SHIM_EXPORT int MPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount,
				int array_of_indices[], MPI_Status array_of_statuses[])
{
	if (!requests_tracked())
		return PMPI_Testsome(incount, array_of_requests, outcount, array_of_indices,
				     array_of_statuses);
	const RequestSnapshot before(incount, array_of_requests);
	const int rc = PMPI_Testsome(incount, array_of_requests, outcount, array_of_indices,
				     array_of_statuses);
	if ((rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS) && outcount)
		some_completed(before, *outcount, array_of_indices);
	return rc;
}

GP_SHIM_EXPORT int MPI_Request_free(MPI_Request *request)
{
	if (!requests_tracked() || !request)
		return PMPI_Request_free(request);
	const MPI_Request before = *request;
	const int rc = PMPI_Request_free(request);
	if (rc == MPI_SUCCESS && before != MPI_REQUEST_NULL)
		request_freed(before);
	return rc;
}

} // extern "C"
