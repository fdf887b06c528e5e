// Package seqblock hands out values of the main group's sequences to the
// planner (planner.SequenceSource) from blocks reserved on main's cluster,
// so an INSERT that needs a sequence value costs no round trip to main
// until its sequence's block runs out. seqblock.go explains the
// reservation and why it is safe with other proxies and restarts.
//
// It owns the blocks and one connection of its own to main (outside the
// pools, so a session holding pooled connections never waits on a pool
// for values). Where main is comes from a Main the proxy supplies.
//
// It may import pgwire and sqlerr; it must never import proxy, backend
// or planner.
package seqblock
