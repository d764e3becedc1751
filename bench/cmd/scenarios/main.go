// Command scenarios runs end-to-end throttling scenarios against
// in-process loopback servers, for pace, go-retryablehttp and failsafe-go
// in the same run, and prints a markdown table per scenario. The servers
// count every arrival, 429 and arrival during an announced pause
// themselves. See ../../README.md ("Scenarios").
//
//	cd bench && go run ./cmd/scenarios [-only NAME[,NAME]] [-runs N] [-seed S] [-serial]
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

func main() {
	only := flag.String("only", "", "run only these scenarios (comma-separated names)")
	runs := flag.Int("runs", 1, "runs of each scenario (each with fresh servers)")
	seed := flag.Uint64("seed", 1, "seed of the fault injection (flaky-5rps)")
	serial := flag.Bool("serial", false, "run the libraries one after another instead of at the same time (about 2.5× longer)")
	list := flag.Bool("list", false, "list the scenarios and exit")
	flag.Parse()

	all := scenarios(*seed)
	if *list {
		for _, sc := range all {
			fmt.Printf("%s\n\t%s\n", sc.name, sc.about)
		}
		fmt.Printf("%s\n\t%s\n", adaptiveName, adaptiveAbout)
		return
	}
	var chosen []*scenario
	adaptive := *only == ""
	if *only == "" {
		chosen = all
	} else {
		names := strings.Split(*only, ",")
		for _, n := range names {
			if strings.TrimSpace(n) == adaptiveName {
				adaptive = true
				continue
			}
			i := slices.IndexFunc(all, func(sc *scenario) bool { return sc.name == strings.TrimSpace(n) })
			if i < 0 {
				fmt.Fprintf(os.Stderr, "scenarios: no scenario %q (try -list)\n", n)
				os.Exit(2)
			}
			chosen = append(chosen, all[i])
		}
	}
	if *runs < 1 {
		fmt.Fprintln(os.Stderr, "scenarios: -runs must be at least 1")
		os.Exit(2)
	}

	start := time.Now()
	fmt.Printf("<!-- %s, %s, %d CPUs, runs %d, seed %d, libraries %s -->\n\n",
		start.UTC().Format("2006-01-02T15:04Z"), runtime.Version(), runtime.NumCPU(), *runs, *seed,
		map[bool]string{false: "at the same time", true: "one after another"}[*serial])
	for _, sc := range chosen {
		t0 := time.Now()
		rs := runScenario(sc, *runs, *serial)
		printTable(os.Stdout, sc, rs, *runs)
		fmt.Fprintf(os.Stderr, "scenarios: %s took %.1f s\n", sc.name, time.Since(t0).Seconds())
	}
	if adaptive {
		t0 := time.Now()
		runAdaptive(*runs)
		fmt.Fprintf(os.Stderr, "scenarios: %s took %.1f s\n", adaptiveName, time.Since(t0).Seconds())
	}
	fmt.Fprintf(os.Stderr, "scenarios: all took %.1f s\n", time.Since(start).Seconds())
}
