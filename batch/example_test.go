package batch_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pacehttp/pace/batch"
)

func ExampleRun() {
	emails := []string{"ann@example.com", "bob@example.com", "not an address", "cy@example.com"}
	send := func(ctx context.Context, to string) error {
		if !strings.Contains(to, "@") {
			return errors.New("no @ in address")
		}
		return nil // deliver the mail here
	}
	rep, err := batch.Run(context.Background(), emails, send, batch.Options{Concurrency: 2})
	for _, r := range rep.Results {
		fmt.Println(r.Index, r.Outcome, r.Attempts, r.Err)
	}
	fmt.Println(err)
	// Output:
	// 0 succeeded 1 <nil>
	// 1 succeeded 1 <nil>
	// 2 failed 1 no @ in address
	// 3 succeeded 1 <nil>
	// batch: 1 failed, 0 interrupted, 0 not started; first failure: item 2 (id "2"): no @ in address
}

func ExampleHTTP() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/users/0" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer api.Close()

	ids := []int{3, 0, 7}
	build := func(ctx context.Context, id int) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodDelete, fmt.Sprintf("%s/users/%d", api.URL, id), nil)
	}
	// In a real job the client's Transport paces and retries per host
	// (pace.Transport); the batch adds a ceiling of its own here.
	rep, _ := batch.Run(context.Background(), ids, batch.HTTP(api.Client(), build, nil),
		batch.Options{Rate: batch.Rate{N: 10, Per: time.Second}})
	for _, r := range rep.Results {
		fmt.Println(ids[r.Index], r.Outcome, r.Status)
	}
	fmt.Println(rep.Summary.Succeeded, "succeeded,", rep.Summary.Failed, "failed")
	// Output:
	// 3 succeeded 204
	// 0 failed 404
	// 7 succeeded 204
	// 2 succeeded, 1 failed
}

func ExampleRun_journal() {
	dir, err := os.MkdirTemp("", "batch-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	opts := batch.Options{Journal: filepath.Join(dir, "invoices.jsonl"), Concurrency: 1}

	invoices := []string{"inv-1", "inv-2", "inv-3", "inv-4"}
	opts.ID = func(i int) string { return invoices[i] } // stable across runs
	ctx, cancel := context.WithCancel(context.Background())
	send := func(ctx context.Context, inv string) error {
		fmt.Println("sending", inv)
		if inv == "inv-2" {
			cancel() // the job is killed after this one
		}
		return nil
	}
	_, err = batch.Run(ctx, invoices, send, opts)
	fmt.Println("first run:", err)

	rep, err := batch.Run(context.Background(), invoices, send, opts)
	fmt.Println("second run:", err, "-", rep.Summary.Resumed, "resumed,", rep.Summary.Succeeded, "succeeded")
	// Output:
	// sending inv-1
	// sending inv-2
	// first run: batch: 0 failed, 0 interrupted, 2 not started: stopped: context canceled
	// sending inv-3
	// sending inv-4
	// second run: <nil> - 2 resumed, 4 succeeded
}
