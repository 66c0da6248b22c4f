#!/usr/bin/env bash
# `make demo`: a local Kubernetes cluster, the operator deployed in it, and a 3-member etcd cluster
# from config/samples, left running. `make demo-down` removes it all.
set -euo pipefail
cd "$(dirname "$0")/.."

cache=${ETCD_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/etcd-operator}
export KUBECONFIG="$cache/localcluster/kubeconfig"
available_timeout=${DEMO_AVAILABLE_TIMEOUT:-300}
started=$SECONDS

step() { printf '\n=== [%3ds] %s\n' "$((SECONDS - started))" "$*"; }

step "1/5 local cluster: building what is missing (first run: about 10 minutes), then starting 3 nodes"
t0=$SECONDS
go run ./hack/localcluster up
echo "cluster up in $((SECONDS - t0))s"
kubectl="$(go run ./hack/binaries kubernetes)/kubectl"
etcdctl="$(go run ./hack/binaries etcd | grep 'etcd-v3\.6\.')/etcdctl"

step "2/5 deploying the operator from this work tree"
t0=$SECONDS
hack/deploy.sh
echo "operator ready in $((SECONDS - t0))s"

step "3/5 applying config/samples (a 3-member EtcdCluster named etcd, namespace default)"
"$kubectl" apply -k config/samples

step "4/5 waiting up to ${available_timeout}s for all 3 members to be Ready voters (Available, Reconciled)"
t0=$SECONDS
available=""
while (( SECONDS - t0 < available_timeout )); do
	line=$("$kubectl" get etcdcluster etcd -o jsonpath='{.status.readyMembers}/{.spec.replicas} ready, Available={.status.conditions[?(@.type=="Available")].status} ({.status.conditions[?(@.type=="Progressing")].reason})' 2>/dev/null || true)
	printf '\r  [%3ds] %-90s' "$((SECONDS - t0))" "${line:-waiting for status}"
	# Available turns True once a quorum is Ready; the demo waits for the whole cluster.
	available=$("$kubectl" get etcdcluster etcd -o jsonpath='{.status.conditions[?(@.type=="Available")].status}/{.status.conditions[?(@.type=="Progressing")].reason}/{.status.readyMembers}/{.spec.replicas}' 2>/dev/null || true)
	IFS=/ read -r avail reason ready want <<<"$available"
	[[ $avail == True && $reason == Reconciled && $ready == "$want" ]] && break
	sleep 2
done
echo
if [[ ${avail:-} != True || ${reason:-} != Reconciled || ${ready:-} != "${want:-}" ]]; then
	echo "The EtcdCluster has not converged after ${available_timeout}s. What the operator says:" >&2
	"$kubectl" describe etcdcluster etcd >&2 || true
	"$kubectl" -n etcd-operator-system logs deployment/etcd-operator --tail=30 >&2 || true
	exit 1
fi
echo "Available with ${ready}/${want} Ready voters in $((SECONDS - t0))s"

step "5/5 what is running"
"$kubectl" get etcdcluster,etcdmember,pods -o wide
# The host dials Pod IPs directly: it must never resolve cluster names through its own resolver.
endpoints=$("$kubectl" get pods -l etcd-operator.cozystack.io/cluster=etcd --field-selector=status.phase=Running \
	-o jsonpath='{range .items[*]}http://{.status.podIP}:2379,{end}')
echo
"$etcdctl" --endpoints "${endpoints%,}" member list -w table
"$etcdctl" --endpoints "${endpoints%,}" endpoint status -w table || true

cat <<EOM

Done in $((SECONDS - started))s. Everything is left running. To use it:
  export KUBECONFIG=$KUBECONFIG
  $kubectl get etcdcluster etcd -o wide
  $etcdctl --endpoints ${endpoints%,} put hello world
  $kubectl scale etcdcluster etcd --replicas=5
Inside the cluster, clients use http://etcd-client.default.svc:2379.
Remove it all with: make demo-down
EOM
