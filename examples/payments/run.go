package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// workers is how many orders are charged at once.
const workers = 4

// passes is how many times an order is charged at most: a failed charge is
// tried again after the others, with the same key.
const passes = 3

// result is what charging every order did, as the client and the API saw
// it.
type result struct {
	orders  []Order
	charges []Charge // by order; the zero Charge where charging failed
	errs    []error  // by order
	again   int      // calls of Charge after the first pass
	books   ledger   // the API's books at the end
}

// run parses args, charges the orders they ask for through a fake payment
// API, prints what happened to stdout and returns the exit code: 0 if every
// order was charged exactly once, 1 otherwise, 2 for bad flags (one line on
// stderr).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	n, err := parseArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		usage(stdout)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "payments: %v (see -h)\n", err)
		return 2
	}
	r, err := chargeAll(ctx, n, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "payments: %v\n", err)
		return 1
	}
	if !r.print(stdout) {
		return 1
	}
	return 0
}

// chargeAll starts the fake API and charges n orders through it.
func chargeAll(ctx context.Context, n int, stdout io.Writer) (result, error) {
	api := newFakeAPI()
	defer api.close()
	base := http.DefaultTransport.(*http.Transport).Clone()
	defer base.CloseIdleConnections()
	client, err := NewClient(api.srv.URL, base)
	if err != nil {
		return result{}, err
	}
	fmt.Fprintf(stdout, "payment API  %s (local fake): deduplicates POST /v1/charges by Idempotency-Key;\n", api.srv.URL)
	fmt.Fprintf(stdout, "             429 on every %dth request, 503 on every %dth, and trouble after 2 in %d charges\n",
		throttleEvery, unavailableEvery, troubleCycle)
	fmt.Fprintf(stdout, "client       pace.Transport: token bucket 100/s, bursts of 10, for the API's host; up to 8 attempts;\n")
	fmt.Fprintf(stdout, "             Idempotency-Key: charge-<order ID>, the same on every attempt and every call\n\n")

	r := result{orders: makeOrders(n), charges: make([]Charge, n), errs: make([]error, n)}
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				r.charges[i], r.errs[i] = client.Charge(ctx, r.orders[i])
			}
		})
	}
	for i := range r.orders {
		next <- i
	}
	close(next)
	wg.Wait()

	// An order whose charge failed (attempts ran out, say) is simply
	// charged again later: the same key makes that safe.
	for range passes - 1 {
		for i, err := range r.errs {
			if err != nil && ctx.Err() == nil {
				r.charges[i], r.errs[i] = client.Charge(ctx, r.orders[i])
				r.again++
			}
		}
	}
	r.books = api.ledger()
	return r, nil
}

// makeOrders returns n orders.
func makeOrders(n int) []Order {
	orders := make([]Order, n)
	for i := range orders {
		orders[i] = Order{
			ID:       fmt.Sprintf("order-%03d", i+1),
			Customer: fmt.Sprintf("cus_%03d", i%7+1),
			Amount:   int64(500 + 125*i),
			Currency: "eur",
		}
	}
	return orders
}

// check counts what must be zero: orders charged twice, orders not
// charged, and answers that do not match the API's books.
func (r *result) check() (twice, missing, wrong int) {
	ids := map[string]bool{}
	for i, o := range r.orders {
		switch made := r.books.perOrder[o.ID]; {
		case made > 1:
			twice++
		case made == 0:
			missing++
		}
		c := r.charges[i]
		if r.errs[i] != nil {
			continue
		}
		if c.Order != o.ID || c.Amount != o.Amount || ids[c.ID] {
			wrong++
		}
		ids[c.ID] = true
	}
	return twice, missing, wrong
}

// failed returns the orders the client could not charge.
func (r *result) failed() int {
	n := 0
	for _, err := range r.errs {
		if err != nil {
			n++
		}
	}
	return n
}

// print writes the orders that took more than one attempt and the
// summary, and reports whether every order was charged exactly once.
func (r *result) print(w io.Writer) bool {
	fmt.Fprintln(w, "orders that needed more than one attempt (what each attempt met):")
	for i, o := range r.orders {
		h := r.books.history[idempotencyKey(o)]
		if len(h) < 2 {
			continue
		}
		got := r.charges[i].ID
		if r.errs[i] != nil {
			got = "not charged: " + r.errs[i].Error()
		}
		fmt.Fprintf(w, "  %s  %-60s %s\n", o.ID, strings.Join(h, " → "), got)
	}
	twice, missing, wrong := r.check()
	b := r.books
	row := func(name, format string, args ...any) {
		fmt.Fprintf(w, "  %-19s %s\n", name, fmt.Sprintf(format, args...))
	}
	fmt.Fprintln(w, "\nsummary")
	row("orders", "%d, one charge requested for each", len(r.orders))
	row("requests received", "%d by the API: %d first attempts, %d retries, each with its order's Idempotency-Key",
		b.requests, len(r.orders), b.requests-len(r.orders))
	// The API's faults, none of them a failed order: the client retried
	// every one, and the idempotency store made the retries safe.
	row("faults (retried)", "%d throttled: 429 before processing (retry-after-ms %d: the host paused)", b.throttled, retryAfterMs)
	row("", "%d unavailable: 503 before processing", b.unavailable)
	row("", "%d charged, then answered 503: the client could not know the charge was made", b.failedAfter)
	row("", "%d charged, then the connection dropped: likewise", b.dropped)
	row("replayed", "%d retries of a charge already made, answered from the idempotency store: no new charge", b.replayed)
	if r.again > 0 {
		row("called again", "%d times by the caller for orders whose charge failed, same keys", r.again)
	}
	row("charges made", "%d", b.made)
	row("charged twice", "%d orders", twice)
	row("not charged", "%d orders", missing)
	if f := r.failed(); f > 0 {
		row("orders failed", "%d: the client gave up on them (their last error is listed above)", f)
	} else {
		row("orders failed", "0: every order ended with its charge")
	}
	ok := twice == 0 && missing == 0 && wrong == 0 && r.failed() == 0 && b.made == len(r.orders)
	if wrong > 0 {
		row("mismatched", "%d answers do not match the order", wrong)
	}
	if ok {
		fmt.Fprintf(w, "OK: %d orders, %d charges: every order charged exactly once\n", len(r.orders), b.made)
	} else {
		fmt.Fprintf(w, "NOT OK: %d orders, %d charges, %d charged twice, %d not charged, %d failed\n",
			len(r.orders), b.made, twice, missing, r.failed())
	}
	return ok
}
