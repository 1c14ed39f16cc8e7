#!/bin/bash
# set quickack 1 on the subnet route of every gpc host namespace as it appears (bounded)
end=$((SECONDS + ${1:-600}))
declare -A done_ns
while ((SECONDS < end)); do
	for ns in $(ip netns list | awk '{print $1}' | grep -E '^gpc-[0-9a-f]+-h[0-9]+$'); do
		[[ -n ${done_ns[$ns]:-} ]] && continue
		r=$(ip netns exec "$ns" ip -4 route show proto kernel 2>/dev/null | head -1)
		[[ -z $r ]] && continue
		if ip netns exec "$ns" ip route change $r quickack 1 2>>/tmp/s24/quickack.err; then
			done_ns[$ns]=1; echo "$ns: $(ip netns exec "$ns" ip -4 route show proto kernel | head -1)"
		fi
	done
	sleep 0.1
done
