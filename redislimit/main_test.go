package redislimit

import (
	"context"
	"testing"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/realserver"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{}) // the client logs every failed dial of TestRedisKilled
	goleak.VerifyTestMain(m)
}

// quiet is a go-redis logger that logs nothing.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// newClient returns a client of the redis-server at addr, closed by
// t.Cleanup.
func newClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// newLimiter returns a Limiter of l on rdb, closed by t.Cleanup.
func newLimiter(t testing.TB, rdb redis.UniversalClient, l pace.Limit, o Options) *Limiter {
	t.Helper()
	lim, err := New(rdb, l, o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = lim.Close() })
	return lim
}

// startRedis starts a redis-server and returns it with a client of it.
func startRedis(t testing.TB) (*realserver.Redis, *redis.Client) {
	t.Helper()
	srv := realserver.StartRedis(t)
	return srv, newClient(t, srv.Addr())
}

// waitCtx returns a context that ends after d, cancelled by t.Cleanup.
func waitCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
