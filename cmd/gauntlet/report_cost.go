package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gauntlet-eval/gauntlet/harness/compare"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// usd formats a cost in US dollars: at least two decimals and three
// significant digits ("$7.00", "$0.14", "$0.00735"), "n/a" when there is
// no price (nil), never $0 for an unpriced model.
func usd(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return "$" + dollars(*v)
}

// dollars is a dollar amount with at least two decimals and three
// significant digits.
func dollars(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	decimals := max(2, 2-int(math.Floor(math.Log10(math.Abs(v)))))
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	// Trailing zeros past the second decimal say nothing.
	if i := strings.IndexByte(s, '.'); i >= 0 {
		for len(s) > i+3 && s[len(s)-1] == '0' {
			s = s[:len(s)-1]
		}
	}
	return s
}

// costValue is a cost as a JUnit property value: decimal dollars, to a
// ten-billionth (a sum of float costs has noise in its last digits).
func costValue(v float64) string { return strconv.FormatFloat(math.Round(v*1e10)/1e10, 'f', -1, 64) }

// latencyText is a median latency, "n/a" when no test finished.
func latencyText(ms *int64) string {
	if ms == nil {
		return "n/a"
	}
	return strconv.FormatInt(*ms, 10) + " ms"
}

// writeSpend prints a run's cost line in the text report: its cost, the
// judges' part, the cost per 1,000 tests (its cost ÷ its finished tests ×
// 1,000), its tokens and the median of lat, its results' durations.
// Without a price for the run's model the cost is "n/a".
func writeSpend(b *strings.Builder, info runs.Info, p50 *int64) {
	if info.CostUSD == nil {
		b.WriteString("cost n/a (no price for the model in pricing.yaml)")
	} else {
		fmt.Fprintf(b, "cost %s (judges %s)", usd(info.CostUSD), usd(info.JudgeCostUSD))
		if info.DoneTests > 0 {
			per := *info.CostUSD / float64(info.DoneTests) * 1000
			fmt.Fprintf(b, ", %s per 1,000 tests", usd(&per))
		}
	}
	t := info.Tokens
	fmt.Fprintf(b, "; tokens %d prompt (%d cached), %d completion (%d reasoning); p50 latency %s\n",
		t.Prompt, t.Cached, t.Completion, t.Reasoning, latencyText(p50))
}

// spendProperties are a run's cost and tokens as JUnit properties: cost_usd,
// judge_cost_usd and cost_per_1000_tests only when its model had a price,
// the tokens only when it recorded some.
func spendProperties(info runs.Info) []junitProperty {
	var props []junitProperty
	if info.CostUSD != nil {
		props = append(props, junitProperty{"cost_usd", costValue(*info.CostUSD)})
		if info.JudgeCostUSD != nil {
			props = append(props, junitProperty{"judge_cost_usd", costValue(*info.JudgeCostUSD)})
		}
		if info.DoneTests > 0 {
			props = append(props, junitProperty{"cost_per_1000_tests", costValue(*info.CostUSD / float64(info.DoneTests) * 1000)})
		}
	}
	t := info.Tokens
	if t.Prompt == 0 && t.Completion == 0 && t.Cached == 0 && t.Reasoning == 0 {
		// A run that recorded no tokens (made before they were counted, or
		// all answered from the cache) keeps the report it had.
		return props
	}
	return append(props, junitProperty{"tokens_prompt", strconv.FormatInt(t.Prompt, 10)},
		junitProperty{"tokens_completion", strconv.FormatInt(t.Completion, 10)},
		junitProperty{"tokens_cached", strconv.FormatInt(t.Cached, 10)},
		junitProperty{"tokens_reasoning", strconv.FormatInt(t.Reasoning, 10)})
}

// figureRow is one run in the table of models side by side.
type figureRow struct {
	label   string
	score   *float64
	figures compare.Figures
}

// writeFigures prints the runs side by side, one row each: the overall
// score with its 95 % interval, the cost per 1,000 tests, the median
// latency, the run's total cost and its tokens. A model without a price
// shows "n/a" for its costs.
func writeFigures(w io.Writer, rows []figureRow) error {
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tSCORE\t95% CI\tCOST/1K TESTS\tP50 LATENCY\tCOST\tTOKENS\tTESTS\t")
	for _, r := range rows {
		f := r.figures
		ci := "-"
		if f.CI95 != nil {
			ci = fmt.Sprintf("[%.2f, %.2f]", f.CI95.Low, f.CI95.High)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t\n", r.label, overall(r.score), ci, usd(f.CostPer1000Tests),
			latencyText(f.LatencyP50MS), usd(f.CostUSD), f.Tokens.Prompt+f.Tokens.Completion, f.Tests)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	writeTable(w, &table)
	return nil
}

// runLatencyP50 is the median duration of a run's answered (passed and
// failed) results: the one the run stored when it ended, else (a run
// still running, or stored before runs kept it) one more pass over its
// samples, in memory that grows with the distinct durations, not with
// the results. Reading the stored one spares a report of a million
// results a pass over all of them.
func runLatencyP50(info runs.Info, samples resultSource) (*int64, error) {
	if info.LatencyP50MS != nil {
		return info.LatencyP50MS, nil
	}
	var lat compare.Latencies
	err := samples(func(res runs.Result) error {
		if res.Status == runs.TestPassed || res.Status == runs.TestFailed {
			lat.Add(res.DurationMS)
		}
		return nil
	})
	if ms, ok := lat.P50(); ok {
		return &ms, err
	}
	return nil, err
}
