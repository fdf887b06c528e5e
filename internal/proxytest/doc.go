// Package proxytest is the test set-up the proxy's tests, the differential
// test and the examples share: a topology document over the test clusters
// (Topology, Retarget, Parse), a proxy served on a free loopback port for
// the length of a test (Serve), and client connections through it (DSN,
// Connect). The clusters themselves come from internal/testenv.
//
// It does not import proxy, so that the proxy's own (internal) tests can
// use it: callers build their *proxy.Server (proxy.NewServer with Logger
// for a silent log) and hand it to Serve. It must never be imported by
// non-test code.
package proxytest
