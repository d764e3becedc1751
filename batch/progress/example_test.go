package progress_test

import (
	"context"
	"errors"

	"github.com/pacehttp/pace/batch"
	"github.com/pacehttp/pace/batch/progress"
)

func ExamplePrinter() {
	// Standard output is not a terminal here, so the Printer prints lines;
	// on a terminal it would draw a bar.
	pr := &progress.Printer{Title: "reports"}
	reports := []string{"north", "south", "east", "west"}
	render := func(ctx context.Context, region string) error {
		if region == "east" {
			return errors.New("no data")
		}
		return nil
	}
	rep, _ := batch.Run(context.Background(), reports, render, batch.Options{Concurrency: 1, OnProgress: pr.Update})
	pr.Finish(rep.Summary)
	// Output:
	// reports: 1/4 done (25%): 1 succeeded, 0 failed, 0 throttled; elapsed 0s
	// reports: 2/4 done (50%): 2 succeeded, 0 failed, 0 throttled; elapsed 0s
	// reports: 3/4 done (75%): 2 succeeded, 1 failed, 0 throttled; elapsed 0s
	// reports: 4/4 done (100%): 3 succeeded, 1 failed, 0 throttled; elapsed 0s
	// reports done: 4 items: 3 succeeded, 1 failed, 0 not started; 0 throttled, 0 retries, 0 pauses; elapsed 0s
}
