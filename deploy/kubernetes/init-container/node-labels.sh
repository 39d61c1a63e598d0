#!/bin/sh
# node-labels.sh: the init container of deploy/kubernetes/init-container.
# It reads the topology.kubernetes.io/zone label of the node the pod runs
# on and writes the instance's configuration: the shared properties file
# followed by client.tag.zone=<zone>. (A properties file rather than an env
# file: the rackstream image is distroless, with no shell to source one.)
#
# Environment (the defaults are the pod's paths; tests override them):
#   NODE_NAME   the node, from the downward API (spec.nodeName); required
#   KUBE_API    the API server [https://kubernetes.default.svc]
#   SA_DIR      service account token and CA [/var/run/secrets/kubernetes.io/serviceaccount]
#   CONFIG_IN   the shared properties [/etc/rackstream/rackstream.properties]
#   CONFIG_OUT  the file rackstream runs with [/run/rackstream/rackstream.properties]
set -eu

: "${NODE_NAME:?NODE_NAME is not set: pass spec.nodeName through the downward API}"
KUBE_API=${KUBE_API:-https://kubernetes.default.svc}
SA_DIR=${SA_DIR:-/var/run/secrets/kubernetes.io/serviceaccount}
CONFIG_IN=${CONFIG_IN:-/etc/rackstream/rackstream.properties}
CONFIG_OUT=${CONFIG_OUT:-/run/rackstream/rackstream.properties}

# The API server is verified with the cluster's CA; the token is read from
# a file and sent in a header, never put on a command line.
node=$(curl --fail --silent --show-error --max-time 10 --retry 3 --retry-connrefused \
  --cacert "$SA_DIR/ca.crt" \
  --header @- \
  "$KUBE_API/api/v1/nodes/$NODE_NAME" <<HDR
Authorization: Bearer $(cat "$SA_DIR/token")
HDR
) || {
  echo "node-labels: cannot read node $NODE_NAME from $KUBE_API (is the ClusterRole rackstream-node-reader bound to the pod's service account?)" >&2
  exit 1
}

# The API server's JSON is compact and label values cannot hold quotes, so
# the label is one "key":"value" pair (an escaped copy inside an annotation
# has a backslash before each quote and does not match).
zone=$(printf '%s' "$node" | sed -n 's/.*"topology\.kubernetes\.io\/zone":"\([^"]*\)".*/\1/p')
if [ -z "$zone" ]; then
  echo "node-labels: node $NODE_NAME has no topology.kubernetes.io/zone label: client.tag.zone cannot be set" >&2
  exit 1
fi

tmp=$CONFIG_OUT.tmp
{
  cat "$CONFIG_IN"
  echo
  echo "# Added by node-labels.sh: the zone of node $NODE_NAME."
  echo "client.tag.zone=$zone"
} >"$tmp"
mv "$tmp" "$CONFIG_OUT"
echo "node-labels: client.tag.zone=$zone (node $NODE_NAME)"
