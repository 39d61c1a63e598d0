// Package client queries a Rackstream cluster's stores over HTTP from Go.
//
// Any instance answers a query for any key by forwarding it to the key's
// owner (package query), but each forward is a second hop. This
// client skips it: it reads the cluster's placement from GET /v1/metadata
// (the partitioner, the partition count, each task's active and standby
// instances and their endpoints), maps a key to its task with the same
// partitioner the processors use (partition), and asks the task's
// active directly.
//
//	c, err := client.New(client.Options{Endpoints: []string{"10.0.0.1:8080", "10.0.0.2:8080"},
//		AuthToken: os.Getenv("RACKSTREAM_TOKEN"), MaxLag: 1000})
//	v, err := c.Get(ctx, "counts", []byte("ann"))
//
// # Placement changes
//
// The placement changes with every rebalance (a generation). Each answer
// carries the generation it was served at and the instance that served it;
// an answer from a newer generation, or from an instance other than the
// one asked (it forwarded: our placement is out of date), makes the next
// request read /v1/metadata again first. A request that no candidate could
// answer refreshes the placement and is tried once more.
//
// # Standbys
//
// With MaxLag (or ReadMaxLag for one read) a standby within that many
// changelog records of its task's active may answer when the active cannot:
// the instance is down (connection refused, timeout) or its task is moving
// (503). Without it only actives answer, as Kafka Streams' interactive
// queries do by default. The answer says who served it (ServedBy, Role) and
// how far behind it was (Lag, Position). An instance that gave no answer
// (refused, timed out) is asked after the others for a few seconds, so
// that a dead active costs one timeout, not one per request.
//
// # Scans
//
// Scan asks one instance, which merges the pages of every task's owner in
// key order (the server does the fan-out); Scanner pages through a whole
// range with the opaque cursor, each key once.
//
// # Windows
//
// A window or session store is read by time: Windows reads a key's windows
// in a time range, routed as Get; AllWindows reads every key's windows in a
// time range a page at a time, as Scan. A stream-stream join's store is
// read the same way with JoinRecords and AllJoinRecords, which return the
// records it buffers from both sides.
//
// # Security and errors
//
// AuthToken sends Authorization: Bearer <token> (the cluster's
// http.auth.token); TLSConfig or RootCAs switch to https and verify the
// instances' certificates (never skipped unless the *tls.Config says so).
// Errors are *Error values naming the instance (process id and endpoint),
// the request and the HTTP status, with the server's message and code;
// ErrNotFound matches an absent key with errors.Is. A request no candidate
// answered returns every candidate's error, joined.
package client
