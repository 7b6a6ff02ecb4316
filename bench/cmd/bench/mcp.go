package main

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"

	"github.com/tollgate-dev/tollgate/bench/internal/report"
	"github.com/tollgate-dev/tollgate/bench/internal/stats"
	"github.com/tollgate-dev/tollgate/internal/mcpproxy/mcpbench"
)

// MCP gateway (issue 15): what the proxy adds to a tools/call on loopback, at p50.
const (
	targetMCPAddedNs = 1e6
	mcpWarmPairs     = 200
	mcpPairs         = 1000
)

// mcpMode is one decision mode's figures, one value per run.
type mcpMode struct {
	mode, label            string
	direct, proxied, added []float64
	directP99, proxiedP99  []float64
	setup                  *mcpbench.Setup
}

// benchMCP measures the same tools/call made directly to an MCP server and through the MCP proxy,
// alternately, for each decision mode; the modes' runs are interleaved.
func benchMCP(ctx context.Context, cfg config) ([]report.Row, []string, error) {
	samples := filepath.Join(cfg.root, "config", "samples")
	modes := []*mcpMode{
		{mode: mcpbench.InProcess, label: "decisions in process"},
		{mode: mcpbench.Remote, label: "remote decision endpoint"},
	}
	for _, m := range modes {
		s, err := mcpbench.Start(ctx, samples, m.mode)
		if err != nil {
			return nil, nil, fmt.Errorf("mcp %s: %w", m.mode, err)
		}
		defer s.Close()
		m.setup = s
	}
	for run := range cfg.runs {
		for _, m := range modes {
			if err := ctx.Err(); err != nil {
				return nil, nil, fmt.Errorf("mcp benchmark: %w", err)
			}
			runtime.GC()
			direct, proxied, err := m.setup.Measure(ctx, mcpWarmPairs, mcpPairs)
			if err != nil {
				return nil, nil, fmt.Errorf("mcp %s: %w", m.mode, err)
			}
			d, p := stats.Latencies(direct).Sort(), stats.Latencies(proxied).Sort()
			m.direct = append(m.direct, float64(d.Percentile(50)))
			m.proxied = append(m.proxied, float64(p.Percentile(50)))
			m.added = append(m.added, float64(p.Percentile(50)-d.Percentile(50)))
			m.directP99 = append(m.directP99, float64(d.Percentile(99)))
			m.proxiedP99 = append(m.proxiedP99, float64(p.Percentile(99)))
			progress("mcp run %d/%d %s: direct p50 %s, proxied p50 %s, added %s", run+1, cfg.runs, m.mode,
				d.Percentile(50), p.Percentile(50), p.Percentile(50)-d.Percentile(50))
		}
	}
	over := fmt.Sprintf("%d runs", cfg.runs)
	row := func(id, name string, v []float64) report.Row {
		return report.Row{ID: id, Name: name, Unit: report.UnitNanos, Summary: stats.Summarize(v), Over: over}
	}
	in, remote := modes[0], modes[1]
	target := report.Target{Op: report.AtMost, Value: targetMCPAddedNs}
	rows := []report.Row{
		row("mcp.call.direct.p50", "5. MCP tools/call straight to the server, p50", in.direct),
		row("mcp.call.proxied.p50", "5. MCP tools/call through the proxy, "+in.label+", p50", in.proxied),
		row("mcp.call.added.p50", "5. MCP proxy adds, "+in.label+", p50", in.added).WithTarget(target),
		row("mcp.call.proxied.p99", "5. MCP tools/call through the proxy, "+in.label+", p99", in.proxiedP99),
		row("mcp.call.remote.proxied.p50", "5. MCP tools/call through the proxy, "+remote.label+", p50", remote.proxied),
		row("mcp.call.remote.added.p50", "5. MCP proxy adds, "+remote.label+", p50", remote.added).WithTarget(target),
	}
	notes := []string{fmt.Sprintf("MCP: the official Go SDK (github.com/modelcontextprotocol/go-sdk) client and server over Streamable HTTP on loopback, all in the bench process: "+
		"one tools/call of a search tool under config/samples' coding-agent passport (pre_tool_call allowed, its result screened by post_tool_call), made straight to the server and through `tollgate mcp-proxy` alternately, "+
		"%d pairs per run after %d warm-up pairs; the agent authenticates with a static token; \"adds\" is the proxied p50 minus the direct p50 of the same run. "+
		"Remote: the decision endpoint (decider.Server) on loopback, two HTTP round trips per call (the call and its result), the agent's token forwarded.", mcpPairs, mcpWarmPairs)}
	return rows, notes, nil
}
