#!/usr/bin/env bash
# `loadgate k8s` on a real single-node Kubernetes (issue 32), built here from what a package registry gives: the
# Kubernetes components from the k8s.io/kubernetes Go module (tests/k8s-cluster/go.mod), CoreDNS with four plugins
# (tests/k8s-cluster/coredns), a pause process (tests/k8s-cluster/pause), etcd, containerd, runc and the CNI plugins
# from Debian. Everything runs on this machine in a temporary directory, the API on 127.0.0.1, and is stopped and
# removed at the end (also on Ctrl-C or an error).
#
#   apt-get install etcd-server containerd runc containernetworking-plugins nginx-light podman openssl curl python3
#   bench/k8s-local.sh                 # LEVEL=2 SHARDS=2 RATE=2000 DUR=20 CONNS=16
#   LEVEL=1 bench/k8s-local.sh         # the control plane only (no kubelet, no containers)
#
# Level 1: etcd, kube-apiserver (x509 certificates made with openssl, a service-account key pair),
# kube-controller-manager and kube-scheduler. `loadgate k8s` renders a spec against nginx for SHARDS pods; the
# objects go in with server-side apply into a namespace that enforces Pod Security "restricted" (every warning
# printed, and any warning fails the level); the Job controller's pods are read back with `kubectl -o json` and
# checked against what the renderer meant (indexes, host names, args, env, resources, security contexts, volumes,
# the failure policy, the headless Service).
#
# Level 2: containerd (the native snapshotter, runc, cgroupfs) and the kubelet (cgroup v1 allowed), CoreDNS on
# 127.0.0.53 as the cluster's DNS, loadgate's image (Containerfile.host, FROM scratch, built by podman) and a pause
# image imported into containerd's k8s.io namespace (no registry). The same manifests with the pod template on the
# host's network (hostNetwork: true, dnsPolicy: ClusterFirstWithHostNet, no containerPort: the scheduler would take
# it for a host port that two pods cannot share), so that the load goes to nginx on 127.0.0.1 only; the shards find
# shard 1's barrier by the headless Service's DNS name as on any cluster. The Job runs, `kubectl logs -l
# batch.kubernetes.io/job-name=NAME --tail=-1 --max-log-requests=N > LOG; loadgate merge LOG` is checked against
# nginx's count, and the pods' timeline is printed. Then a second Job whose index 1 container is killed (SIGKILL)
# mid-run: it must not be retried (one pod for that index, the Job Failed with failedIndexes "1") and the merge must
# exit 4 naming shard 2 missing.
#
# The Go builds (go1.24+, a few hundred MB of modules from the Go module proxy) go to K8S_BIN (default
# /tmp/loadgate-k8s-bin), niced (nice -n 19) and one package at a time (-p 1): about 29 minutes for the five
# Kubernetes binaries and 3 for CoreDNS on a 2-core VM shared with Rust builds (docs/scale-out.md), skipped when the
# binaries are there. This machine's root lacks CAP_SYS_RESOURCE, so containerd keeps the pods' oom_score_adj at its
# own (restrict_oom_score_adj); the kubelet's sysctls are put back at the end. LOADGATE is the binary put in the
# image (default target/release/loadgate).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
LEVEL=${LEVEL:-2}
SHARDS=${SHARDS:-2}
RATE=${RATE:-2000}
DUR=${DUR:-20}
CONNS=${CONNS:-16}
K8S_BIN=${K8S_BIN:-/tmp/loadgate-k8s-bin}
K8S_VERSION=v1.33.13
LOADGATE=${LOADGATE:-${CARGO_TARGET_DIR:-$ROOT/target}/release/loadgate}
NGINX_PORT_WANTED=${NGINX_PORT:-18091}
ETCD_PORT=${ETCD_PORT:-12379}
API_PORT=${API_PORT:-16443}
KUBELET_PORT=${KUBELET_PORT:-10250}
DNS_IP=${DNS_IP:-127.0.0.53}
NODE_IP=${NODE_IP:-$(ip -4 route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')}
RUNC=${RUNC:-$(command -v runc || echo /usr/sbin/runc)}
CNI_BIN=${CNI_BIN:-/usr/lib/cni}
export PATH="$PATH:/usr/sbin:/sbin"

t0=$(date +%s.%N)
say() { printf '[%7.1fs] %s\n' "$(echo "$(date +%s.%N) - $t0" | bc)" "$*"; }
die() { say "FAILED: $*" >&2; exit 1; }

need=(etcd openssl curl python3 nginx bc ip)
[ "$LEVEL" -ge 2 ] && need+=(containerd ctr podman)
for tool in "${need[@]}"; do command -v "$tool" >/dev/null || die "missing $tool (see the apt-get line at the top)"; done
[ "$LEVEL" -lt 2 ] || [ -x "$RUNC" ] || die "missing runc"
[ "$LEVEL" -lt 2 ] || [ -x "$CNI_BIN/bridge" ] || die "missing the CNI plugins in $CNI_BIN (containernetworking-plugins)"
[ -x "$LOADGATE" ] || die "missing $LOADGATE (cargo build --release --locked -p loadgate)"
[ -n "$NODE_IP" ] || die "no IPv4 address for the node: set NODE_IP"
[ "$(id -u)" = 0 ] || die "run as root (the kubelet and containerd need it)"

# --- The Go builds -------------------------------------------------------------------------------------------------
go_build() { # DIR OUT PACKAGE [LDFLAGS]
  (cd "$1" && CGO_ENABLED=${CGO:-1} nice -n 19 go build -p 1 -ldflags "${4:-} -s -w" -o "$2" "$3")
}
mkdir -p "$K8S_BIN"
ld=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  ld="$ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
done
for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl; do
  if [ "$LEVEL" -lt 2 ] && [ "$c" = kubelet ]; then continue; fi
  [ -x "$K8S_BIN/$c" ] && continue
  command -v go >/dev/null || die "missing go (1.24 or later) to build $c"
  s=$(date +%s); say "go build $c ($K8S_VERSION) ..."
  go_build "$ROOT/tests/k8s-cluster" "$K8S_BIN/$c" "k8s.io/kubernetes/cmd/$c" "$ld"
  say "built $c in $(( $(date +%s) - s )) s"
done
if [ "$LEVEL" -ge 2 ]; then
  for c in coredns pause; do
    [ -x "$K8S_BIN/$c" ] && continue
    s=$(date +%s); say "go build $c ..."
    CGO=0 go_build "$ROOT/tests/k8s-cluster/$c" "$K8S_BIN/$c" .
    say "built $c in $(( $(date +%s) - s )) s"
  done
fi
KUBECTL="$K8S_BIN/kubectl"

# --- Scratch, nginx, and the teardown ------------------------------------------------------------------------------
. "$HERE/nginx.sh" # $work, nginx_start, served; its EXIT trap is replaced by teardown below, which calls it last.
pids=()
cluster_up=0
# Paths the kubelet and containerd use whatever their flags say (the device plugins' socket, runc's state, the
# shims' sockets): removed at the end when this run made them.
made_dirs=()
for d in /var/lib/kubelet /run/containerd; do [ -e "$d" ] || made_dirs+=("$d"); done
teardown() {
  local code=$?
  trap - EXIT INT TERM
  set +e
  say "teardown"
  if [ "$cluster_up" = 1 ] && [ -f "$work/admin.kubeconfig" ]; then
    # Pods first, so that the kubelet stops their containers and unmounts their volumes.
    timeout 60 "$KUBECTL" --kubeconfig "$work/admin.kubeconfig" delete namespace lg-l1 lg-l2 --ignore-not-found \
      --wait=true >/dev/null 2>&1
  fi
  if [ -S "$work/containerd/containerd.sock" ]; then
    local c
    for c in $(ctr -a "$work/containerd/containerd.sock" -n k8s.io tasks list -q 2>/dev/null); do
      ctr -a "$work/containerd/containerd.sock" -n k8s.io tasks kill -s SIGKILL "$c" >/dev/null 2>&1
    done
  fi
  local i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null; done
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    for _ in $(seq 50); do kill -0 "${pids[i]}" 2>/dev/null || break; sleep 0.1; done
    kill -9 "${pids[i]}" 2>/dev/null
  done
  # containerd's shims outlive it: this run's are the ones started with its socket.
  local p
  for p in /proc/[0-9]*; do
    if tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -q -- "-address $work/containerd/containerd.sock"; then
      kill -9 "${p#/proc/}" 2>/dev/null
    fi
  done
  # Volumes, sandboxes and snapshots the kubelet and containerd mounted under $work, deepest first.
  if [ -d "$work" ]; then
    findmnt -rn -o TARGET | grep "^$work/" | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
  fi
  [ -f "$work/sysctl.saved" ] && sysctl -q -p "$work/sysctl.saved"
  for d in "${made_dirs[@]}"; do rm -rf "$d"; done
  ip link del lg32br0 2>/dev/null
  # The cgroups the kubelet made (cgroupfs driver).
  for d in /sys/fs/cgroup/*/kubepods; do
    [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  nginx_cleanup
  exit "$code"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start() { # NAME COMMAND...: in the background, its output in $work/NAME.log
  local name=$1; shift
  "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
  disown "$!" # the teardown stops it; no job notice from bash
  say "started $name (pid $!)"
}

nginx_start 0 "$NGINX_PORT_WANTED"
say "nginx on 127.0.0.1:$NGINX_PORT (stub_status count: $(served))"

# --- Certificates ---------------------------------------------------------------------------------------------------
pki="$work/pki"; mkdir -p "$pki"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=loadgate-k8s-local-ca -keyout "$pki/ca.key" \
  -out "$pki/ca.crt" 2>/dev/null
cert() { # NAME SUBJECT [SANS]
  openssl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$pki/$1.key" -out "$pki/$1.csr" 2>/dev/null
  local ext="$pki/$1.ext"
  printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n' >"$ext"
  [ -n "${3:-}" ] && echo "subjectAltName=$3" >>"$ext"
  openssl x509 -req -in "$pki/$1.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 1 \
    -extfile "$ext" -out "$pki/$1.crt" 2>/dev/null
}
cert apiserver /CN=kube-apiserver \
  "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:10.96.0.1,IP:$NODE_IP"
cert admin "/O=system:masters/CN=loadgate-admin"
cert kubelet "/CN=$(hostname)" "DNS:$(hostname),IP:$NODE_IP,IP:127.0.0.1"
openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
cat >"$work/admin.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: { server: "https://127.0.0.1:$API_PORT", certificate-authority: "$pki/ca.crt" }
users:
- name: admin
  user: { client-certificate: "$pki/admin.crt", client-key: "$pki/admin.key" }
contexts:
- name: local
  context: { cluster: local, user: admin }
current-context: local
EOF
export KUBECONFIG="$work/admin.kubeconfig"
k() { "$KUBECTL" "$@"; }

# --- Control plane --------------------------------------------------------------------------------------------------
bring_up=$(date +%s.%N)
start etcd etcd --name lg --data-dir "$work/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
  --initial-cluster "lg=http://127.0.0.1:$((ETCD_PORT + 1))"
start kube-apiserver "$K8S_BIN/kube-apiserver" \
  --etcd-servers "http://127.0.0.1:$ETCD_PORT" --bind-address 127.0.0.1 --secure-port "$API_PORT" \
  --advertise-address "$NODE_IP" --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
  --client-ca-file "$pki/ca.crt" --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
  --service-cluster-ip-range 10.96.0.0/16 --authorization-mode Node,RBAC \
  --kubelet-client-certificate "$pki/admin.crt" --kubelet-client-key "$pki/admin.key" \
  --kubelet-certificate-authority "$pki/ca.crt" --kubelet-preferred-address-types InternalIP \
  --cert-dir "$work/apiserver"
for _ in $(seq 600); do
  curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
    "https://127.0.0.1:$API_PORT/readyz" >/dev/null 2>&1 && break
  kill -0 "${pids[1]}" 2>/dev/null || { tail -20 "$work/kube-apiserver.log"; die "kube-apiserver exited"; }
  sleep 0.2
done
curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "https://127.0.0.1:$API_PORT/readyz" \
  >/dev/null || { tail -20 "$work/kube-apiserver.log"; die "kube-apiserver not ready after 120 s"; }
cluster_up=1
say "kube-apiserver ready ($(k version -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])'))"
start kube-controller-manager "$K8S_BIN/kube-controller-manager" --kubeconfig "$KUBECONFIG" \
  --authentication-kubeconfig "$KUBECONFIG" --authorization-kubeconfig "$KUBECONFIG" \
  --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
  --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
  --leader-elect=false --bind-address 127.0.0.1 --secure-port 0 --use-service-account-credentials=false \
  --flex-volume-plugin-dir "$work/flexvolume"
start kube-scheduler "$K8S_BIN/kube-scheduler" --kubeconfig "$KUBECONFIG" \
  --authentication-kubeconfig "$KUBECONFIG" --authorization-kubeconfig "$KUBECONFIG" \
  --leader-elect=false --bind-address 127.0.0.1 --secure-port 0
for _ in $(seq 300); do
  k get serviceaccount default -n default >/dev/null 2>&1 && break
  sleep 0.2
done
k get serviceaccount default -n default >/dev/null || die "the controller manager made no default service account"
say "control plane up in $(echo "$(date +%s.%N) - $bring_up" | bc | xargs printf '%.1f') s"

# --- The spec and its manifests -------------------------------------------------------------------------------------
cat >"$work/k8s-local.yaml" <<SPEC
version: 1
name: k8s-local
vars:
  url: ""
  dur: "${DUR}s"
hardware:
  generator: { threads: 1 }
  on_mismatch: warn
target:
  base_url: "{{ url }}"
scenarios:
  open:
    request: { path: / }
    load: { open: { rate: $RATE/s, connections: $CONNS, duration: "{{ dur }}" } }
    slo: [errors == 0]
SPEC
"$LOADGATE" k8s "$work/k8s-local.yaml" --shards "$SHARDS" --image localhost/loadgate:k8s-local \
  --set "url=http://127.0.0.1:$NGINX_PORT" >"$work/rendered.yaml"
say "rendered $(grep -c '^kind:' "$work/rendered.yaml") objects for $SHARDS shards"

# --- Level 1 --------------------------------------------------------------------------------------------------------
say "Level 1: server-side apply into namespace lg-l1 (Pod Security: restricted, enforced)"
k create namespace lg-l1 >/dev/null
k label namespace lg-l1 pod-security.kubernetes.io/enforce=restricted pod-security.kubernetes.io/warn=restricted \
  pod-security.kubernetes.io/audit=restricted >/dev/null
k apply --server-side --field-manager loadgate -n lg-l1 -f "$work/rendered.yaml" >"$work/l1-apply.out" 2>"$work/l1-apply.err" \
  || { cat "$work/l1-apply.err"; die "the API server refused the rendered objects"; }
sed 's/^/  /' "$work/l1-apply.out"
if [ -s "$work/l1-apply.err" ]; then
  sed 's/^/  apply: /' "$work/l1-apply.err"
  die "server-side apply printed warnings (above)"
fi
say "applied with no warning"
k create --dry-run=client -o json -n lg-l1 -f "$work/rendered.yaml" >"$work/rendered.json"
for _ in $(seq 300); do
  [ "$(k get pods -n lg-l1 -l batch.kubernetes.io/job-name=k8s-local -o name | wc -l)" -ge "$SHARDS" ] && break
  sleep 0.2
done
k get -n lg-l1 -o json job/k8s-local service/k8s-local configmap/k8s-local >"$work/l1-objects.json"
k get -n lg-l1 -o json pods -l batch.kubernetes.io/job-name=k8s-local >"$work/l1-pods.json"
k get -n lg-l1 -o json events >"$work/l1-events.json"
python3 "$ROOT/tests/k8s-cluster/check_level1.py" "$work/rendered.json" "$work/l1-objects.json" "$work/l1-pods.json" \
  "$SHARDS" "$work/l1-events.json" || die "Level 1: the objects read back are not what the renderer meant"
k delete namespace lg-l1 --wait=false >/dev/null # its pods were never scheduled: they go at once
say "Level 1 passed"
[ "$LEVEL" -ge 2 ] || exit 0

# --- Level 2: containerd, the images, the kubelet, CoreDNS ----------------------------------------------------------
say "Level 2: containerd + kubelet"
mkdir -p "$work/containerd" "$work/cni/net.d" "$work/kubelet"
snapshotter=${SNAPSHOTTER:-native}
cat >"$work/containerd/config.toml" <<EOF
version = 2
root = "$work/containerd/root"
state = "$work/containerd/state"
[grpc]
  address = "$work/containerd/containerd.sock"
[ttrpc]
  address = "$work/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$work/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/pause:k8s-local"
  # The kubelet gives a sandbox oom_score_adj -998 and a Guaranteed pod's container -997, lower than this machine
  # lets root set (runc: "nsexec: failed to update /proc/self/oom_score_adj: Permission denied"): containerd keeps
  # them at its own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "$snapshotter"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$RUNC"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN"
    conf_dir = "$work/cni/net.d"
EOF
# A bridge network for pods that are not on the host's (the node is NetworkReady only with a CNI configuration).
cat >"$work/cni/net.d/10-lg.conflist" <<EOF
{ "cniVersion": "0.4.0", "name": "lg", "plugins": [
  { "type": "bridge", "bridge": "lg32br0", "isGateway": true, "ipMasq": false,
    "ipam": { "type": "host-local", "ranges": [[{ "subnet": "10.244.32.0/24" }]], "dataDir": "$work/cni/ipam" } },
  { "type": "loopback" } ] }
EOF
start containerd containerd --config "$work/containerd/config.toml"
CTR=(ctr -a "$work/containerd/containerd.sock" -n k8s.io)
for _ in $(seq 100); do "${CTR[@]}" version >/dev/null 2>&1 && break; sleep 0.2; done
"${CTR[@]}" version >/dev/null || { tail -20 "$work/containerd.log"; die "containerd did not start"; }

# The images, from no registry: podman with storage of its own (as tests/image.rs), saved and imported.
img=$(date +%s.%N)
pod_state="$work/podman"
podman_() {
  podman --root "$pod_state/storage" --runroot "$pod_state/run" --storage-driver vfs --events-backend file \
    --runtime "$RUNC" "$@"
}
ctx="$work/image"; mkdir -p "$ctx/rootfs/etc" "$ctx/rootfs/tmp" "$ctx/work"
objcopy --strip-debug "$LOADGATE" "$ctx/loadgate" 2>/dev/null || cp "$LOADGATE" "$ctx/loadgate"
for lib in $(ldd "$LOADGATE" | grep -o '/[^ ]*'); do
  mkdir -p "$ctx/rootfs$(dirname "$lib")"; cp "$lib" "$ctx/rootfs$lib"
done
printf 'root:x:0:0:root:/:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/work:/sbin/nologin\n' >"$ctx/rootfs/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$ctx/rootfs/etc/group"
chmod 1777 "$ctx/rootfs/tmp"
cp "$ROOT/Containerfile.host" "$ctx/"
version=$("$LOADGATE" --version | awk '{print $2}')
podman_ build --quiet --file "$ctx/Containerfile.host" --build-arg "VERSION=$version" --tag localhost/loadgate:k8s-local \
  "$ctx" >/dev/null
mkdir -p "$work/pause/ctx"; cp "$K8S_BIN/pause" "$work/pause/ctx/pause"
printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' >"$work/pause/ctx/Containerfile"
podman_ build --quiet --file "$work/pause/ctx/Containerfile" --tag localhost/pause:k8s-local "$work/pause/ctx" >/dev/null
for i in loadgate pause; do
  podman_ save --quiet --format docker-archive -o "$work/$i.tar" "localhost/$i:k8s-local"
  "${CTR[@]}" images import --snapshotter "$snapshotter" "$work/$i.tar" >/dev/null
done
rm -rf "$pod_state" "$work/loadgate.tar" "$work/pause.tar"
say "images built and imported in $(echo "$(date +%s.%N) - $img" | bc | xargs printf '%.1f') s: $("${CTR[@]}" images list -q | grep -c k8s-local) (loadgate $version, pause)"

cat >"$work/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: "$NODE_IP"
port: $KUBELET_PORT
healthzBindAddress: 127.0.0.1
healthzPort: 0
readOnlyPort: 0
authentication:
  anonymous: { enabled: false }
  webhook: { enabled: false }
  x509: { clientCAFile: "$pki/ca.crt" }
authorization: { mode: AlwaysAllow }
tlsCertFile: "$pki/kubelet.crt"
tlsPrivateKeyFile: "$pki/kubelet.key"
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: "unix://$work/containerd/containerd.sock"
clusterDNS: ["$DNS_IP"]
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
imageGCHighThresholdPercent: 100
evictionHard: { "memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%" }
serializeImagePulls: false
podLogsDir: "$work/kubelet/pod-logs"
volumePluginDir: "$work/kubelet/volume-plugins"
EOF
# The kubelet sets kernel tunables it wants (vm.overcommit_memory=1, kernel.panic=10, kernel.panic_on_oops=1, ...;
# protectKernelDefaults would only refuse to start): the machine's values are kept and put back by the teardown.
for s in vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys \
  kernel.keys.root_maxbytes; do
  echo "$s=$(sysctl -n "$s")" >>"$work/sysctl.saved"
done
start kubelet "$K8S_BIN/kubelet" --config "$work/kubelet/config.yaml" --kubeconfig "$KUBECONFIG" \
  --root-dir "$work/kubelet/root" --cert-dir "$work/kubelet/pki" --hostname-override "$(hostname)" \
  --node-ip "$NODE_IP" --v 1
kubelet_pid=${pids[-1]}
cat >"$work/Corefile" <<EOF
.:53 {
  bind $DNS_IP
  errors
  log
  kubernetes cluster.local in-addr.arpa ip6.arpa {
    kubeconfig $KUBECONFIG
    pods insecure
  }
}
EOF
start coredns "$K8S_BIN/coredns" -conf "$work/Corefile"
for _ in $(seq 600); do
  [ "$(k get node "$(hostname)" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ] && break
  kill -0 "$kubelet_pid" 2>/dev/null || { tail -30 "$work/kubelet.log"; die "the kubelet exited"; }
  sleep 0.2
done
[ "$(k get node "$(hostname)" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ] \
  || { tail -30 "$work/kubelet.log"; die "the node is not Ready after 120 s"; }
say "node $(hostname) Ready ($(k get node "$(hostname)" -o jsonpath='{.status.nodeInfo.kubeletVersion} {.status.nodeInfo.containerRuntimeVersion}'), allocatable cpu $(k get node "$(hostname)" -o jsonpath='{.status.allocatable.cpu}'))"

# The manifests on the host's network (see the header), in namespace lg-l2.
host_net() { # RENDERED.json OUT.json
  python3 - "$1" "$2" <<'PY'
import json, sys
text, items, decoder = open(sys.argv[1]).read(), [], json.JSONDecoder()
while text.strip():
    doc, end = decoder.raw_decode(text.strip())
    items.append(doc)
    text = text.strip()[end:]
for o in items:
    if o["kind"] == "Job":
        spec = o["spec"]["template"]["spec"]
        spec["hostNetwork"] = True
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
        for c in spec["containers"]:
            c.pop("ports", None)
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, open(sys.argv[2], "w"))
PY
}
k create namespace lg-l2 >/dev/null
for _ in $(seq 100); do k get serviceaccount default -n lg-l2 >/dev/null 2>&1 && break; sleep 0.2; done

run_job() { # NAME DURATION: renders, applies, prints the apply's output
  "$LOADGATE" k8s "$work/k8s-local.yaml" --shards "$SHARDS" --image localhost/loadgate:k8s-local --name "$1" \
    --namespace lg-l2 --set "url=http://127.0.0.1:$NGINX_PORT" --set "dur=$2" >"$work/job-$1.yaml"
  k create --dry-run=client -o json -f "$work/job-$1.yaml" >"$work/$1.rendered.json"
  host_net "$work/$1.rendered.json" "$work/$1.json"
  k apply --server-side --field-manager loadgate -f "$work/$1.json" 2>&1 | sed 's/^/  /'
}
wait_job() { # NAME: until Complete or Failed; sets $state (no subshell: a signal ends the wait at once)
  local s
  for _ in $(seq 1800); do
    s=$(k get job -n lg-l2 "$1" -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type} {end}')
    case "$s" in *Complete*) state=Complete; return;; *Failed*) state=Failed; return;; esac
    # What the kubelet or the runtime refused ends the wait at once, said as it was said.
    if k get events -n lg-l2 --field-selector type=Warning -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}' \
      | grep -E '^(FailedCreatePodSandBox|Failed|FailedMount|ErrImageNeverPull|InspectFailed):' | sort -u >"$work/refused"; then
      state=Refused; return
    fi
    sleep 0.5
  done
  state=Timeout
}
collect() { # NAME: the pods' logs as the docs say; each pod's lines besides the frames, with kubectl's timestamps
  k logs -n lg-l2 -l "batch.kubernetes.io/job-name=$1" --tail=-1 --max-log-requests="$SHARDS" >"$work/$1.log" \
    2>"$work/$1.log.err" || { cat "$work/$1.log.err"; die "kubectl logs failed"; }
  local p
  for p in $(k get pods -n lg-l2 -l "batch.kubernetes.io/job-name=$1" -o name); do
    echo "  $p:"
    k logs -n lg-l2 --timestamps "$p" | awk '/-----BEGIN LOADGATE/ {f = 1} !f {print "    " $0} /-----END LOADGATE/ {f = 0}' \
      | grep -E 'running|barrier|open 1s/|requests in|Rate:|Status:|Errors:| error: ' || true
  done
}

say "Job k8s-local: $SHARDS pods, $RATE/s for ${DUR}s over $CONNS connections against nginx"
before=$(served)
run_job k8s-local "${DUR}s"
wait_job k8s-local
after=$(served)
say "Job k8s-local: $state"
if [ "$state" != Complete ]; then
  [ -s "$work/refused" ] && sed 's/^/  refused: /' "$work/refused"
  k get pods -n lg-l2 -o wide
  k logs -n lg-l2 -l batch.kubernetes.io/job-name=k8s-local --prefix --tail=15 --max-log-requests="$SHARDS" 2>&1 \
    | grep -v '^[^ ]* [A-Za-z0-9+/=]*$' | sed 's/^/  /'
  tail -5 "$work/coredns.log" | sed 's/^/  coredns: /'
  die "the Job did not complete ($state)"
fi
k get -n lg-l2 -o json pods -l batch.kubernetes.io/job-name=k8s-local >"$work/l2-pods.json"
k get -n lg-l2 -o json job/k8s-local >"$work/l2-job.json"
collect k8s-local
# The barrier's name as the pods asked the cluster's DNS for it (CoreDNS's query log).
grep -E '"A IN k8s-local-0\.k8s-local\.' "$work/coredns.log" | head -4 | sed 's/^/  dns: /' || true
code=0
"$LOADGATE" merge "$work/k8s-local.log" --out "$work/merged" >"$work/merge.out" 2>&1 || code=$?
say "loadgate merge: exit $code"
sed 's/^/  /' "$work/merge.out" | tail -25
python3 "$ROOT/tests/k8s-cluster/timeline.py" "$work/l2-pods.json" "$work/l2-job.json" "$work/merged" \
  "$((after - before - 1))" "$SHARDS" || die "Level 2: the run on the kubelet is not what it should be"
[ "$code" = 0 ] || die "the merge of the pods' logs exited $code"

say "Job k8s-local-kill: index 1's container killed mid-run"
run_job k8s-local-kill "$((DUR * 2))s"
victim=""
for _ in $(seq 600); do
  running=$(k get pods -n lg-l2 -l batch.kubernetes.io/job-name=k8s-local-kill \
    -o jsonpath='{range .items[*]}{.status.containerStatuses[0].state.running.startedAt}{"\n"}{end}' | grep -c . || true)
  [ "$running" = "$SHARDS" ] && break
  sleep 0.5
done
[ "$running" = "$SHARDS" ] || die "the pods of k8s-local-kill never all ran"
victim=$(k get pod -n lg-l2 -l batch.kubernetes.io/job-name=k8s-local-kill,batch.kubernetes.io/job-completion-index=1 \
  -o jsonpath='{.items[0].status.containerStatuses[0].containerID}')
sleep "$DUR" # the barrier releases the shards within a second of the last one's start: mid-way through 2 x DUR
say "kill -9 of index 1's container ${victim#containerd://}"
"${CTR[@]}" tasks kill -s SIGKILL "${victim#containerd://}"
wait_job k8s-local-kill
say "Job k8s-local-kill: $state"
k get -n lg-l2 -o json pods -l batch.kubernetes.io/job-name=k8s-local-kill >"$work/kill-pods.json"
k get -n lg-l2 -o json job/k8s-local-kill >"$work/kill-job.json"
collect k8s-local-kill
code=0
"$LOADGATE" merge "$work/k8s-local-kill.log" --out "$work/merged-kill" >"$work/merge-kill.out" 2>&1 || code=$?
say "loadgate merge of the killed run: exit $code"
sed 's/^/  /' "$work/merge-kill.out" | grep -iE 'missing|invalid|shard' | head -10
python3 - "$work/kill-pods.json" "$work/kill-job.json" "$code" "$work/merge-kill.out" "$SHARDS" <<'PY' || die "the killed pod's index was retried or the merge passed"
import json, sys
pods = json.load(open(sys.argv[1]))["items"]
job = json.load(open(sys.argv[2]))
code, merge, shards = int(sys.argv[3]), open(sys.argv[4]).read(), int(sys.argv[5])
index1 = [p for p in pods if p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] == "1"]
term = index1[0]["status"]["containerStatuses"][0]["state"].get("terminated", {})
print(f"  pods of index 1: {len(index1)} (exit code {term.get('exitCode')}, reason {term.get('reason')})")
print(f"  job: failedIndexes {job['status'].get('failedIndexes')!r}, failed {job['status'].get('failed')}, "
      f"succeeded {job['status'].get('succeeded')}, conditions "
      f"{[(c['type'], c.get('reason')) for c in job['status'].get('conditions', []) if c['status'] == 'True']}")
ok = len(index1) == 1 and job["status"].get("failedIndexes") == "1" and code == 4 and f"shard 2/{shards}" in merge and "missing" in merge
print("  not retried, merge invalid naming shard 2:", ok)
sys.exit(0 if ok else 1)
PY
say "Level 2 passed"
