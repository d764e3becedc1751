package main

import (
	"flag"
	"fmt"
	"io"
)

// Defaults and bounds of the flags.
const (
	defaultOrders = 40
	maxOrders     = 10_000
)

// flagSet returns the program's flags, bound to n.
func flagSet(n *int) *flag.FlagSet {
	fs := flag.NewFlagSet("payments", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by run, on one line
	fs.Usage = func() {}
	fs.IntVar(n, "n", defaultOrders, fmt.Sprintf("number of orders to charge (1 to %d)", maxOrders))
	return fs
}

// usage writes the help text to w.
func usage(w io.Writer) {
	fmt.Fprint(w, `Usage: go run ./examples/payments [flags]

Starts a fake payment API on loopback that deduplicates charges by their
Idempotency-Key and throttles, fails and drops connections on a fixed
schedule, then charges -n orders through a pace.Transport that retries, and
checks that every order was charged exactly once. Exit code 0 if so, 1 if
not, 2 for bad flags.

Flags:
`)
	fs := flagSet(new(int))
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// parseArgs returns the number of orders args ask for. The error is
// flag.ErrHelp for -h, or one line saying what is wrong.
func parseArgs(args []string) (n int, err error) {
	fs := flagSet(&n)
	if err := fs.Parse(args); err != nil {
		return 0, err
	}
	if fs.NArg() > 0 {
		return 0, fmt.Errorf("unexpected argument %q: every setting is a flag", fs.Arg(0))
	}
	if n < 1 || n > maxOrders {
		return 0, fmt.Errorf("-n must be from 1 to %d orders, got %d", maxOrders, n)
	}
	return n, nil
}
