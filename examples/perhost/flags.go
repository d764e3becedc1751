package main

import (
	"flag"
	"fmt"
	"io"
)

// usage writes the help text to w.
func usage(w io.Writer) {
	fmt.Fprint(w, `Usage: go run ./examples/perhost

Sends 6 requests to each of five hosts at once through one http.Client
whose pace.Transport paces each host by its own limit (pace.Hosts, with a
default for hosts not listed); every name leads to one server on loopback,
which records the arrivals. Prints the arrivals per host. Exit code 0 if
every request was answered, 1 if not, 2 for a flag or argument: the program
takes none but -h.
`)
}

// parseArgs checks args. The error is flag.ErrHelp for -h, or one line
// saying what is wrong: the program takes no flags but -h, and no
// arguments.
func parseArgs(args []string) error {
	fs := flag.NewFlagSet("perhost", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by run, on one line
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: perhost takes no arguments", fs.Arg(0))
	}
	return nil
}
