// Package assignor computes task placement: which client runs each task's
// active replica and which clients keep its standbys, spread over every
// configured client-tag dimension.
//
// The computation is a pure, deterministic function of its input (no I/O, no
// clocks, no randomness) in the shape of etcd's raft core: the group balancer
// feeds it data and carries its result over the wire.
package assignor
