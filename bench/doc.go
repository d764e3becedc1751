// Package bench compares pace with peer libraries: the cost of one limiter
// decision, the memory and speed of a keyed store, and the overhead of
// pace.Transport as an http.RoundTripper. It is a module of its own so that
// the peers never become dependencies of pace's users. It holds benchmarks,
// and end-to-end throttling scenarios in cmd/scenarios; see README.md for
// how to run them and for the figures.
package bench
