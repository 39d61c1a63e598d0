// Package query is Rackstream's interactive-query server: any instance
// answers a query for any key, reading the task's state where it lives.
//
// Kafka Streams hands its users key-to-host metadata and leaves the RPC to
// them; this package is that layer. Every member of the group knows the
// whole placement (package assignor/balancer), so an instance maps a key to
// its task with the one shared partitioner (processor/partition) and either
// reads its own replica or forwards the request, once, to the instance that
// can answer:
//
//	GET /v1/stores/{store}/keys/{key}   one key, from the task's active
//	        ?max_lag=N                  a standby within N changelog records
//	                                    may answer (a local one first); also
//	                                    the fallback when the active can't
//	        ?min_position=P             refuse (409) a replica behind P
//	        ?key_encoding=base64url     binary keys (RFC 4648 §5)
//	GET /v1/stores/{store}/scan         a key-ordered range over all tasks
//	        ?prefix=&from=&to=&limit=   (or tasks=1,4,7), merged from their
//	        &cursor=&max_lag=&tasks=    owners, paged with an opaque cursor
//	GET /v1/metadata                    the placement and live status
//	GET /v1/status                      this instance's readiness and replicas
//	GET /metrics /healthz /readyz       Prometheus, liveness, readiness
//
// At most one hop: a forwarded request carries HeaderForwardedBy and is
// answered from the receiver's own replica or refused, never forwarded
// again. A response carries "position", the store's checkpoint for that
// task (the next changelog offset), so that a client switching replicas
// can pass min_position and never read backwards.
//
// Errors are JSON {"error": "..."}: 400 bad input, 401 token, 404 unknown
// store or absent key, 409 replica behind min_position, 503 with
// Retry-After while a task restores or moves (or no replica can be
// reached), 502 when retrying cannot help (a peer's certificate is not
// trusted, the instances' tokens differ).
//
// A scan asks each instance once for all the tasks it answers for (a
// bitmap of task ids when they are many), merges their pages in key order
// and continues strictly after the page's last key, so that every key is
// returned exactly once across pages.
//
// /v1/metadata is the placement of the current generation, the same on
// every instance, and a superset of `rackstream assign`'s output (which
// reads it back), plus a live status gathered from every instance under
// one short timeout: an instance that doesn't answer in time is reported
// not ready, with the reason.
//
// The runtime provides the placement, local replicas and readiness through
// the Runtime interface; StoreReplica and StateReplica adapt package
// state's stores. Serve the server with Serve, or mount it in a handler of
// your own served by HTTPServer (the same limits and TLS).
package query
