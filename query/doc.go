// Package query is Rackstream's interactive-query server: any instance
// answers a query for any key, reading the task's state where it lives.
//
// Kafka Streams hands its users key-to-host metadata and leaves the RPC to
// them; this package is that layer. Every member of the group knows the
// whole placement (package assignor/balancer), so an instance maps a key to
// its task with the one shared partitioner (partition) and either
// reads its own replica or forwards the request, once, to the instance that
// can answer:
//
//	GET /v1/stores/{store}/keys/{key}   one key, from the task's active
//	        ?max_lag=N                  a standby within N changelog records
//	                                    may answer (a local one first); also
//	                                    the fallback when the active can't
//	        ?min_position=P             refuse (409) a replica behind P
//	        ?key_encoding=base64url     binary keys (RFC 4648 §5)
//	        ?isolation=latest|committed what the read may see (below)
//	GET /v1/stores/{store}/scan         a key-ordered range over all tasks
//	        ?prefix=&from=&to=&limit=   (or tasks=1,4,7), merged from their
//	        &cursor=&max_lag=&tasks=    owners, paged with an opaque cursor
//	        &isolation=
//	GET /v1/stores/{store}/windows/{key} a key's windows in a time range, of
//	        ?time_from=&time_to=         a window or session store, routed
//	                                     and read as one key (windows.go)
//	GET /v1/stores/{store}/windows      every key's windows in a time range,
//	        ?time_from=&time_to=&limit= merged and paged as a scan
//	        &cursor=&max_lag=&tasks=
//	                                    (a stream-stream join's store answers
//	                                    both routes with its buffered
//	                                    records, joins.go)
//	GET /v1/metadata                    the placement and live status
//	GET /v1/status                      this instance's readiness and replicas
//	GET /metrics /healthz /readyz       Prometheus, liveness, readiness
//	GET /debug/pprof/...                the Go runtime's profiles, when
//	                                    Options.Profiling (http.pprof) asks
//
// Routes are declared on an http.ServeMux (routes.go). A key is everything
// after /keys/, '/' escaped or not, even where the mux would clean the path
// (a//b, a/./b): the mux routes a copy of the path in which the store and
// the key are single segments, and the handlers read both from the path as
// received. What matches no route gets 404 (no_route), a method other than
// GET or HEAD 405, both in the one error shape below.
//
// # Isolation
//
// A read's isolation says what it may see of a task's writes (docs/design.md §7):
// latest, its latest processed state (the default under at-least-once),
// or committed, what its last commit wrote (the default under exactly-once,
// which refuses latest with 400: the latest writes belong to an open
// transaction). A forwarded read carries the client's isolation parameter
// if it gave one; otherwise the peer applies the same default. What each
// returns is the Reader's to say; the runtime's (service) reads
// the task's record cache and write buffer over its committed state for
// latest, and the committed state alone for committed. Either way the
// position answered is the store's checkpoint, read before the value: a
// latest value is at least that new (and may be newer, not yet durable),
// so min_position keeps its meaning at both isolations.
//
// # Global stores
//
// A store marked Global is held whole by every instance: its lookups and
// scans are answered from the local copy (Reader.Global), never routed by
// task nor forwarded, and name task -1 (GlobalTask).
//
// A lookup with max_lag does not wait on an active that does not answer
// (frozen, or its network cut): after HedgeAfter it asks the next
// candidate, a standby, too, and relays the first answer; a peer that
// failed to answer is asked after every other candidate for
// PeerFailureMemory (route.go). A lookup of actives only has no one else
// to ask and waits up to ForwardTimeout.
//
// At most one hop: a forwarded request (one marked Rackstream-Forwarded-By,
// whatever the authentication) is answered from the receiver's own
// replica or refused, never forwarded again. A response carries "position",
// the store's checkpoint for that task (the next changelog offset), so that
// a client switching replicas can pass min_position and never read
// backwards.
//
// # Trust
//
// Clients authenticate with the bearer token (http.auth.token, compared in
// constant time) and, over HTTPS, with a certificate when
// http.tls.client.auth asks for one (LoadTLS). /healthz and /readyz need no
// token.
//
// Peers are group members, and what a member announces is untrusted input:
// an endpoint that is not host:port (internal/endpoint) is never dialled,
// and the URL of a forward is built from scheme and host alone. The token
// never leaves the instance: a forwarded request is a hop signed with
// HMAC-SHA256 under a key derived from the token, over the method, path,
// query, placement generation, signing time, sender and receiver (hop.go),
// and the receiver accepts it within ±30 s of its own clock. Only a hop whose
// signature verifies is a peer's: its scan bounds may be as long as stored
// keys. HeaderForwardedBy without a valid signature grants nothing, and with
// no token configured no hop is authenticated: every request is then a
// client's. The marker still keeps the request local, as any hop. Over HTTPS peers are
// verified with http.tls.ca, never skipped, and an instance presents its
// own certificate to them.
//
// # Errors
//
// An error is JSON {"error": "...", "code": "...", "instance": "..."}: the
// words, a code a program can switch on, and the instance that answered
// (absent before authentication). 400 bad input, 401 token or hop
// signature, 404 unknown store (unknown_store), absent key (key_not_found)
// or route (no_route), 409 replica behind min_position
// (behind_min_position), 503 with Retry-After while a task restores or
// moves (or no replica can be reached), 502 when retrying cannot help (a
// peer's certificate is not trusted, the instances' tokens differ). Peer
// URLs, dial errors and storage errors go to the log only; /readyz shows the
// runtime's NotReady condition, never a raw error. The one answer outside
// this shape is net/http's own: a request it refuses before any handler
// runs (a malformed escape in the path, oversized headers) gets its
// plain-text 400 or 431.
//
// A scan asks each instance once for all the tasks it answers for (a
// bitmap of task ids when they are many), merges their pages in key order
// and continues strictly after the page's last key, so that every key is
// returned exactly once across pages. That key travels to peers in a
// cursor, never in from: a stored key may be longer than a request's
// bounds may be (MaxKeyBytes). A scan a peer refuses as it is (400), or
// one too long to forward, is a 400: it can never succeed.
//
// /v1/metadata is assignor.Metadata, the document's one definition: the
// placement of the current generation, the same on every instance, and a
// superset of `rackstream assign`'s output (which reads it back), with the
// assignment settings the leader planned it with (carried in the
// placement; Options.Settings, this instance's own, for a placement
// without them), plus a live
// status gathered from every instance under one short timeout: an
// instance that doesn't answer in time is reported not ready, with the
// reason.
//
// # The read path
//
// A task's writes reach its store's LevelDB at each commit (package state,
// docs/design.md §7), or, on a standby, as it applies the changelog; the
// checkpoint written with them is the position. A lookup maps its key to
// a task with the partitioner, picks the replica that may answer from the
// placement, and reads it here or on the one peer it forwards to: the
// service's Reader checks the store's health, reads the checkpoint, then
// the value through the store's read-only view, at the isolation asked
// for. The answer carries the value, the position and who served it.
//
// The server reads the placement, local replicas and readiness through its
// own Reader interface, read-only; it imports neither package state nor
// the runtime (package processor). The one implementation adapts the
// runtime in package service and checks each store's health on
// every read. Serve the server with Serve, or mount it in a handler of
// your own served by HTTPServer (the same limits and TLS).
package query
