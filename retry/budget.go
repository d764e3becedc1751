package retry

import "time"

// Budget limits retries per key to a reserve plus a share of recent
// requests. So a dead or overloaded upstream receives a bounded number of
// retries. A client that sends little can still retry each of its few
// requests. The rule is Finagle's RetryBudget
// (com.twitter.finagle.service.RetryBudget, "Retry Budgets" in Finagle's
// user guide). A retry is allowed when
//
//	MinRetriesPerSec × TTL (in seconds)  +  PercentCanRetry × (requests)  −  (retries)  ≥  1
//
// where requests and retries are the key's counts of the last TTL. A
// request is counted once, however many attempts it makes. A retry is
// counted when it is allowed. The counts are kept in ten slices of TTL/10,
// as Finagle's WindowedAdder keeps them. So a count lasts between 9/10 of
// the TTL and the TTL. In any stretch of 9/10 of the TTL, a key makes at
// most this many retries: the reserve, plus PercentCanRetry × its requests
// of the TTL before the stretch's last retry.
//
// The defaults are Finagle's: TTL 10 s, MinRetriesPerSec 10,
// PercentCanRetry 0.2. That is 100 retries plus one for every five
// requests. 50 sequential calls that each need two retries all get them
// (100 retries, within the reserve). 1,000 concurrent calls of one key (a
// host, by default) that fails every time cost at most 1,000 + 200 + 100
// = 1,300 attempts, not MaxAttempts × 1,000. Each key has its own budget:
// with pace.Transport.Key choosing API keys, each API key of the host has
// its reserve. A host that stays dead gets the reserve again as
// the window turns over. That is at most 100 retries per 9 s, plus one per
// five requests.
//
// A retry takes from the budget only when it would otherwise be made: the
// method is safe to repeat, attempts remain, the deadline allows the wait.
// Some retries the server scheduled itself with a positive delay
// (Retry-After and the other headers the Transport reads). The budget does
// not hold them back, as the key's cooldown already paces them. They are
// still counted.
//
// Memory: the Transport keeps a key's counts in the one entry it keeps
// per key, with the key's Stats, for its first 4,096 keys. The keys past
// those share one entry, so they share one budget: stricter, never
// looser. A key's counts are cleared when a request of it ends with no
// retry counted in its window. Successful requests are not counted while
// none is held. That can only make the budget stricter, as the reserve
// stands for them.
//
// The zero Budget means the defaults. An invalid one makes the Transport
// invalid (a *pace.ConfigError naming "Retry.Budget.TTL" and so on). A
// Budget is a plain value; the Transport keeps the counts.
type Budget struct {
	// TTL is the length of the window over which requests and retries are
	// counted, within [1s, 60s] as Finagle requires. Zero means 10s.
	TTL time.Duration
	// MinRetriesPerSec is the reserve: the retries per second a key may
	// make however few requests it sends, at most 1,000,000. Zero means
	// 10; a negative value means no reserve.
	MinRetriesPerSec int
	// PercentCanRetry is the share of a key's recent requests that may be
	// retried on top of the reserve, as a fraction (0.2 is 20%, as in
	// Finagle). It is at most 1000, with three decimal places used. Zero means
	// 0.2; a negative value means none; NaN is refused.
	PercentCanRetry float64
	// Disabled turns the budget off: retries are limited only by
	// MaxAttempts and the rest of the Policy.
	Disabled bool
}
