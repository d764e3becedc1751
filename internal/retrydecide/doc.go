// Package retrydecide is the executor of a retry.Policy, the half of
// package retry that only pace's Transport calls: the retry decision, the
// backoff schedule and its jitter, and the retry budget's state. Package
// retry is the public face (the Policy, its defaults and the Reason
// vocabulary); this package holds no configuration of its own.
package retrydecide
