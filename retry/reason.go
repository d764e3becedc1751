package retry

// Reason says why a request waited, was retried or was not. The Transport
// puts one in pace.Event and pace.AttemptsError, and its default decision's
// in [Check].Reason, so a Decide hook and an observer read the same words.
// Besides the constants below, a Check may carry the kind of a transport
// error in words, such as "connection reset", and Decide may set any text.
// The set may grow.
type Reason string

// Reasons the Transport reports. The comment names the pace.Event kind
// that carries each; a Check carries ReasonNotIdempotent, ReasonServerHint
// and ReasonDecided too.
const (
	ReasonCooldown      Reason = "cooldown"        // EventWait: the key was paused by the server
	ReasonLimit         Reason = "limit"           // EventWait: the key's client-side limit
	ReasonServerDelay   Reason = "server-delay"    // EventRetry: Retry-After or a reset header set the wait
	ReasonBackoff       Reason = "backoff"         // EventRetry: the backoff schedule set the wait
	ReasonAttempts      Reason = "attempts"        // EventGiveUp: the attempts are spent (MaxAttempts, or the Host's)
	ReasonDelayTooLong  Reason = "delay-too-long"  // EventGiveUp: the server's delay exceeds MaxRetryAfter
	ReasonBudget        Reason = "budget"          // EventGiveUp: the key's retry budget is spent
	ReasonDeadline      Reason = "deadline"        // EventGiveUp: the wait would outlast the context's deadline
	ReasonNotReplayable Reason = "not-replayable"  // EventGiveUp: the body cannot be sent again
	ReasonNotIdempotent Reason = "not-idempotent"  // EventGiveUp: the method may not be repeated safely
	ReasonServerHint    Reason = "server-hint"     // EventGiveUp: the server said not to retry (Stripe-Should-Retry: false)
	ReasonBackoffStop   Reason = "backoff-stopped" // EventGiveUp: the backoff policy returned backoff.Stop
	ReasonDecided       Reason = "decided"         // EventGiveUp: Policy.Decide ended the call (returned false, or set Fail)
)
