package mcpproxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// Which tools tools/list shows.
//
// A tool is hidden from an agent when its passport can never use it, whatever the arguments:
//
//   - the passport cannot be presented at all: it is unknown (oap.passport_not_found), suspended,
//     revoked or expired (oap.passport_suspended), or does not list the agent's ServiceAccount
//     (oap.subject_not_allowed): every tool is hidden;
//   - the tool's name maps to a capability the passport does not hold (oap.unknown_capability):
//     mcp__<server>__<tool> maps to mcp.tool.execute by the built-in table unless a policy's
//     toolCapabilities maps it to another capability.
//
// Rules are not consulted: a rule's `when` may depend on the arguments, so a rule that denies one
// call says nothing about the next. To hide a tool, leave its capability out of the passport, or map
// the tool to a capability the passport lacks (toolCapabilities: {tool: mcp__github__delete_*,
// capability: mcp.github.admin}).
//
// The engine answers that question without side effects when asked a pre_tool_call with no
// arguments restricted to a policy id no policy carries (VisibilityProbePolicyID): it checks the
// passport, the caller and the capability, then finds no policy to evaluate and denies with
// oap.policy_denied, before any rule, rate limit or external evaluator runs. Over HTTP the same
// question is the OAP verify route (POST /api/verify/policy/{policy_id}), which needs the passport's
// name: a remote proxy without --passport shows every tool.
//
// A hidden tool cannot be called either. Every tools/call is decided in full; a call the decision
// allows to a hidden tool is then denied with the reason it is hidden. That matters for arguments
// that change how the engine reads a call: a call carrying a command field (command, cmd, …) is a
// shell call whatever the tool is named, so without this check a passport holding only
// system.command.execute could call any MCP tool by adding "command": "ls" to its arguments.

// VisibilityProbePolicyID is the policy id of visibility probes. No policy should carry it: one that
// did would be evaluated by the probes.
const VisibilityProbePolicyID = "tollgate.mcp.visibility.probe"

// VisibilityProbeCallID is the call id of visibility probes, so that their records in the decision
// log (a deny naming VisibilityProbePolicyID) are not read as denied calls.
const VisibilityProbeCallID = "tollgate-mcp-visibility-probe"

// hiddenCodes are the deny codes that mean the passport can never use the tool.
var hiddenCodes = map[string]bool{
	policy.CodePassportNotFound:  true,
	policy.CodePassportSuspended: true,
	policy.CodeSubjectNotAllowed: true,
	policy.CodeUnknownCapability: true,
}

// errCannotProbe means the decider cannot answer a visibility probe; the tool is shown.
var errCannotProbe = errors.New("visibility cannot be probed without the passport's name")

// Bounds of the visibility cache.
const (
	defaultVisibilityTTL  = 5 * time.Second
	maxVisibilityEntries  = 10000
	maxConcurrentProbes   = 8
	maxVisibilityProbeDur = 10 * time.Second
)

// visibility answers and caches visibility probes.
type visibility struct {
	decider  Decider
	passport string
	ttl      time.Duration
	now      func() time.Time

	mu    sync.Mutex
	cache map[visKey]visEntry
}

type visKey struct{ who, tool string }

type visEntry struct {
	visible bool
	reason  policy.Reason // why it is hidden
	expires time.Time
}

// callerKey identifies whose visibility an entry is: the authenticated ServiceAccount, or the
// presented token's digest (a remote decider authenticates it), or nobody (authentication off).
func callerKey(c Caller) string {
	switch {
	case c.Identity != nil:
		return "sa:" + c.Identity.String()
	case c.Token != "":
		sum := sha256.Sum256([]byte(c.Token))
		return "token:" + hex.EncodeToString(sum[:16])
	}
	return ""
}

// filter returns whether caller may see each of names (in order).
func (v *visibility) filter(ctx context.Context, caller Caller, names []string) ([]bool, error) {
	entries, err := v.lookup(ctx, caller, names)
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(entries))
	for i, e := range entries {
		out[i] = e.visible
	}
	return out, nil
}

// hidden returns the reason the tool is hidden from caller, or nil when it is visible.
func (v *visibility) hidden(ctx context.Context, caller Caller, tool string) (*policy.Reason, error) {
	entries, err := v.lookup(ctx, caller, []string{tool})
	if err != nil {
		return nil, err
	}
	if entries[0].visible {
		return nil, nil
	}
	r := entries[0].reason
	return &r, nil
}

// lookup answers names from the cache, probing the rest.
func (v *visibility) lookup(ctx context.Context, caller Caller, names []string) ([]visEntry, error) {
	who := callerKey(caller)
	out := make([]visEntry, len(names))
	now := v.now()
	var todo []int
	v.mu.Lock()
	for i, n := range names {
		if e, ok := v.cache[visKey{who, n}]; ok && now.Before(e.expires) {
			out[i] = e
			continue
		}
		todo = append(todo, i)
	}
	v.mu.Unlock()
	if len(todo) == 0 {
		return out, nil
	}
	ctx, cancel := context.WithTimeout(ctx, maxVisibilityProbeDur)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxConcurrentProbes)
	for _, i := range todo {
		g.Go(func() error {
			e, err := v.probe(gctx, caller, names[i])
			if err != nil {
				return err
			}
			out[i] = e
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.cache)+len(todo) > maxVisibilityEntries {
		for k, e := range v.cache {
			if !now.Before(e.expires) || len(v.cache)+len(todo) > maxVisibilityEntries {
				delete(v.cache, k)
			}
		}
	}
	for _, i := range todo {
		out[i].expires = now.Add(v.ttl)
		v.cache[visKey{who, names[i]}] = out[i]
	}
	return out, nil
}

// probe asks whether the caller's passport can ever use tool.
func (v *visibility) probe(ctx context.Context, caller Caller, tool string) (visEntry, error) {
	req := policy.Request{Passport: v.passport, ToolName: tool, ToolInput: map[string]any{},
		Hook: policy.HookPreToolCall, PolicyID: VisibilityProbePolicyID, CallID: VisibilityProbeCallID}
	d, err := v.decider.Decide(ctx, &req, caller)
	switch {
	case errors.Is(err, errCannotProbe):
		return visEntry{visible: true}, nil
	case err != nil:
		return visEntry{}, fmt.Errorf("deciding which tools the agent may see: %w", err)
	case d.Decision != policy.DecisionDeny || len(d.Reasons) == 0 || !hiddenCodes[d.Reasons[0].Code]:
		return visEntry{visible: true}, nil
	}
	return visEntry{reason: d.Reasons[0]}, nil
}
