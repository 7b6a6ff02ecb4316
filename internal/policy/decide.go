package policy

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// outcome kinds of one policy's evaluation.
const (
	outAllow = iota
	outDeny
	outModify
	outError
)

// outcome is what one policy decided for a call.
type outcome struct {
	kind     int
	code     string
	msg      string
	ref      string
	explicit bool // a rule, requirement or evaluator decided (not defaultAction)
	input    map[string]any
	err      error
}

// Decide answers req against the snapshot. It never fails: problems become deny decisions with an
// OAP reason code. It is safe for concurrent use.
func (s *Snapshot) Decide(ctx context.Context, req Request) Decision {
	now := s.clock()
	d := Decision{
		DecisionID:     s.nextID(),
		BundleRevision: s.revision,
		CreatedAt:      now,
		ExpiresIn:      int64(s.ttl / time.Second),
	}
	switch req.Hook {
	case "", HookPreToolCall, HookPreLLMCall, HookPostLLMCall, HookPostToolCall:
	default:
		return deny(d, CodeInvalidRequest, fmt.Sprintf("unknown hook %q: want %s, %s, %s or %s",
			req.Hook, HookPreToolCall, HookPreLLMCall, HookPostLLMCall, HookPostToolCall), "")
	}
	var p *cPassport
	switch {
	case req.Passport != "":
		p = s.lookup(req.Passport)
		if p == nil {
			return deny(d, CodePassportNotFound, fmt.Sprintf("passport %q not found in namespace %q", req.Passport, s.namespace), "")
		}
		if req.Caller != nil && !req.Caller.mayPresent(&p.src, s.namespace) {
			return s.subjectNotAllowed(d, p, req.Caller)
		}
		if req.AgentID != "" && req.AgentID != p.agentID {
			return deny(d, CodeInvalidRequest, fmt.Sprintf("agent_id %q does not match passport %q", req.AgentID, req.Passport), "")
		}
	case req.AgentID != "":
		p = s.byAgentID[req.AgentID]
		if p == nil {
			return deny(d, CodePassportNotFound, fmt.Sprintf("no passport with agent id %q in namespace %q", req.AgentID, s.namespace), "")
		}
		if req.Caller != nil && !req.Caller.mayPresent(&p.src, s.namespace) {
			return s.subjectNotAllowed(d, p, req.Caller)
		}
	default:
		return deny(d, CodeInvalidRequest, "passport or agent_id is required", "")
	}
	d.PassportDigest = p.passportDigest()
	if p.status != StatusActive {
		return deny(d, CodePassportSuspended, "passport "+p.src.Name+" is "+p.status, "")
	}
	if sd, ok := autoSuspended(d, p, now); ok {
		return sd
	}
	if !p.expires.IsZero() {
		left := p.expires.Sub(now)
		if left <= 0 {
			return deny(d, CodePassportSuspended, "passport "+p.src.Name+" expired at "+p.expires.UTC().Format(time.RFC3339), "")
		}
		if secs := int64(left / time.Second); secs < d.ExpiresIn {
			d.ExpiresIn = secs
		}
	}
	switch req.Hook {
	case HookPreLLMCall:
		return s.decideInput(d, p, &req)
	case HookPostLLMCall:
		return s.decideResponse(d, p, &req)
	case HookPostToolCall:
		return s.decideToolResult(d, p, &req)
	}
	return s.decideTool(ctx, d, p, &req, now)
}

// subjectNotAllowed denies a caller whose ServiceAccount the passport does not list. The answer is
// about who asks, not about the call, so it is never cacheable (expires_in 0).
func (s *Snapshot) subjectNotAllowed(d Decision, p *cPassport, c *Caller) Decision {
	d.PassportDigest = p.passportDigest()
	d.ExpiresIn = 0
	return deny(d, CodeSubjectNotAllowed, fmt.Sprintf("service account %s may not present passport %s/%s (not in spec.subjects.serviceAccounts)",
		c, s.namespace, p.src.Name), "")
}

// mayPresent reports whether c's ServiceAccount may present p, a passport of namespace ns (the
// snapshot's, when p names none).
func (c *Caller) mayPresent(p *Passport, ns string) bool {
	if p.Namespace != "" {
		ns = p.Namespace
	}
	return (c.Namespace == ns || c.AnyNamespace) && c.ServiceAccount != "" &&
		slices.Contains(p.Spec.Subjects.ServiceAccounts, c.ServiceAccount)
}

// nextID returns a decision id: a per-snapshot random prefix and a counter.
func (s *Snapshot) nextID() string {
	var buf [40]byte
	b := append(buf[:0], s.idPrefix...)
	b = strconv.AppendUint(b, s.seq.Add(1), 16)
	return string(b)
}

func deny(d Decision, code, msg, ref string) Decision {
	d.Allow = false
	d.Decision = DecisionDeny
	d.Reasons = []Reason{{Code: code, Message: msg}}
	d.PolicyID = ref
	d.ModifiedInput = nil
	return d
}

func allow(d Decision, msg, ref string) Decision {
	d.Allow = true
	d.Decision = DecisionAllow
	d.Reasons = []Reason{{Code: CodeAllowed, Message: msg}}
	d.PolicyID = ref
	return d
}

func (d *Decision) meta() *Metadata {
	if d.Metadata == nil {
		d.Metadata = &Metadata{}
	}
	return d.Metadata
}

// record notes a DryRun or Warn policy's result in metadata.
func record(d *Decision, enforcement int, out outcome) {
	r := PolicyResult{PolicyID: out.ref, Reason: Reason{Code: out.code, Message: out.msg}, ModifiedInput: out.input}
	switch out.kind {
	case outDeny:
		r.Decision = DecisionDeny
	case outModify:
		r.Decision = DecisionModify
		if r.Reason.Code == "" {
			r.Reason.Code = CodeAllowed
		}
	default:
		r.Decision = DecisionAllow
		if r.Reason.Code == "" {
			r.Reason.Code = CodeAllowed
		}
	}
	m := d.meta()
	if enforcement == enfDryRun {
		m.DryRun = append(m.DryRun, r)
	} else {
		m.Warnings = append(m.Warnings, r)
	}
}

// applies reports whether pol is evaluated for req (the OAP verify route restricts by policy id).
func applies(pol *cPolicy, req *Request) bool {
	return named(pol, req) || pol.cluster
}

// named reports whether the request evaluates pol by its policy id (or names none). Cluster
// policies apply even when a request names another policy: a namespace's policy id is no way
// around the cluster's baseline.
func named(pol *cPolicy, req *Request) bool {
	return req.PolicyID == "" || pol.id == req.PolicyID
}

// toolCall is the state of one pre_tool_call evaluation.
type toolCall struct {
	s      *Snapshot
	p      *cPassport
	req    *Request
	tool   string
	limits map[string]any
	act    *activation
	now    time.Time
	run    celRun
	script commandAnalysis // the guard's analysis of the call's command (none: nil script)
	input  map[string]any  // the input as the policies evaluated so far left it
}

// activation returns the CEL activation of the call, with its input as the policies evaluated so
// far left it (setInput).
func (tc *toolCall) activation() *activation {
	if tc.act == nil {
		tc.act = &activation{tool: tc.tool, passport: tc.p, limits: tc.limits, req: *tc.req, now: tc.now,
			guardScript: tc.script, guardInput: tc.req.ToolInput}
		tc.act.setInput(tc.input)
	}
	return tc.act
}

// setInput makes m the input later policies see (a policy modified it).
func (tc *toolCall) setInput(m map[string]any) {
	tc.input = m
	tc.run.forget()
	if tc.act != nil {
		tc.act.setInput(m)
	}
}

// sameMap reports whether a and b are the same map object (or both nil).
func sameMap(a, b map[string]any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

func (s *Snapshot) decideTool(ctx context.Context, d Decision, p *cPassport, req *Request, now time.Time) Decision {
	tool := req.ToolName
	if tool == "" {
		return deny(d, CodeInvalidRequest, "tool_name is required for hook "+HookPreToolCall, "")
	}
	set := p.set
	present := presentFields(req.ToolInput) // which kinds of argument fields the call carries
	capID, mapped := set.capability(tool, req.ToolInput, present&fieldCommand != 0)
	switch {
	case !mapped && !p.allowUnmapped:
		return deny(d, CodeUnknownCapability, "tool "+clipName(tool)+" maps to no capability: name it in a policy's toolCapabilities, or set the passport's unmappedTools to Allow", "")
	case mapped:
		if _, ok := p.caps[capID]; !ok {
			return deny(d, CodeUnknownCapability, "tool "+clipName(tool)+" needs capability "+capID+", which passport "+p.src.Name+" does not hold", "")
		}
	}
	// A call carrying a shell command runs it, whatever its tool maps to (an MCP tool with a
	// command argument): it needs the shell capability too.
	if capID != CapCommandExecute && present&fieldCommand != 0 && !isEditorCall(tool, req.ToolInput) {
		if _, ok := p.caps[CapCommandExecute]; !ok {
			return deny(d, CodeUnknownCapability, "tool "+clipName(tool)+" carries a shell command, which needs capability "+CapCommandExecute+", which passport "+p.src.Name+" does not hold", "")
		}
	}
	script, v := p.guardCall(s.analyses, tool, capID, req.ToolInput, present)
	if v.code != "" {
		return deny(d, v.code, v.msg, "")
	}
	var blocked bool
	if d, blocked = s.screenToolInput(d, p, req); blocked {
		return d
	}
	tc := toolCall{s: s, p: p, req: req, tool: tool, now: now, run: celRun{parent: ctx, limit: s.deadline}, script: script,
		input: req.ToolInput}
	if mapped {
		tc.limits, _ = p.src.Spec.Limits[capID].(map[string]any)
	}
	d = s.decidePolicies(ctx, d, &tc)
	tc.run.close()
	return d
}

// decidePolicies evaluates the policies selecting the passport for a tool call the guard let through.
func (s *Snapshot) decidePolicies(ctx context.Context, d Decision, tc *toolCall) Decision {
	p, req, set := tc.p, tc.req, tc.p.set
	input := req.ToolInput
	modified := false
	var allowRef, allowMsg, firstRef string
	var modRefs []string // every policy that changed the input, in order
	evaluated := 0
	for _, pol := range set.policies {
		if !applies(pol, req) {
			continue
		}
		if named(pol, req) {
			evaluated++
		}
		out := pol.evalTool(ctx, tc)
		if out.kind == outError {
			if pol.failOpen {
				m := d.meta()
				m.Warnings = append(m.Warnings, PolicyResult{PolicyID: out.ref, Decision: DecisionAllow,
					Reason: Reason{Code: CodeEvaluatorError, Message: "policy skipped (failurePolicy Open): " + out.err.Error()}})
				continue
			}
			out = outcome{kind: outDeny, code: CodeEvaluatorError, msg: "evaluation failed: " + out.err.Error(), ref: out.ref}
		}
		if pol.enforcement != enfEnforce {
			if pol.enforcement == enfDryRun || out.kind != outAllow {
				record(&d, pol.enforcement, out)
			}
			continue
		}
		switch out.kind {
		case outDeny:
			return deny(d, out.code, out.msg, out.ref)
		case outModify:
			input, modified = out.input, true
			tc.setInput(input)
			modRefs = append(modRefs, out.ref)
		default:
			if firstRef == "" {
				firstRef = out.ref
			}
			if out.explicit && allowRef == "" {
				allowRef, allowMsg = out.ref, out.msg
			}
		}
	}
	if req.PolicyID != "" && evaluated == 0 {
		return deny(d, CodePolicyDenied, "policy "+req.PolicyID+" does not apply to passport "+p.src.Name, req.PolicyID)
	}
	// Rate limits and budgets count only calls that the policies let through.
	if out, limited := s.takeCounters(ctx, &d, tc, input); limited {
		return deny(d, out.code, out.msg, out.ref)
	}
	if modified {
		d = allow(d, "input modified by "+modRefs[0], modRefs[len(modRefs)-1])
		for _, ref := range modRefs[1:] {
			d.Reasons = append(d.Reasons, Reason{Code: CodeAllowed, Message: "input modified by " + ref})
		}
		d.Decision = DecisionModify
		d.ModifiedInput = input
		d.meta().ModifiedBy = modRefs
		return d
	}
	if allowRef == "" {
		allowRef = firstRef
	}
	if allowMsg == "" {
		allowMsg = "allowed"
	}
	return allow(d, allowMsg, allowRef)
}

// evalTool evaluates one policy for a tool call: requires, then the first matching rule, then the
// external evaluator or defaultAction.
func (pol *cPolicy) evalTool(ctx context.Context, tc *toolCall) outcome {
	tool, input := tc.tool, tc.input
	for i := range pol.requires {
		r := &pol.requires[i]
		if !r.tools.match(tool) {
			continue
		}
		ok, err := tc.run.evalBool(r.prg, tc.activation())
		if err != nil {
			return outcome{kind: outError, ref: r.ref, err: fmt.Errorf("requires %s: %w", r.name, err)}
		}
		if !ok {
			return outcome{kind: outDeny, code: r.code, msg: r.message, ref: r.ref, explicit: true}
		}
	}
	idx, exact := pol.byTool[tool]
	if !exact {
		idx = pol.globRules
	}
	for _, i := range idx {
		r := &pol.rules[i]
		if !exact && !r.tools.match(tool) {
			continue
		}
		if r.when != nil {
			ok, err := tc.run.evalBool(r.when, tc.activation())
			if err != nil {
				return outcome{kind: outError, ref: r.ref, err: fmt.Errorf("rule %s: when: %w", r.name, err)}
			}
			if !ok {
				continue
			}
		}
		switch r.action {
		case actDeny:
			return outcome{kind: outDeny, code: r.code, msg: r.message, ref: r.ref, explicit: true}
		case actModify:
			out, err := r.modify(&tc.run, tc.activation(), input)
			if err != nil {
				return outcome{kind: outError, ref: r.ref, err: fmt.Errorf("rule %s: modify: %w", r.name, err)}
			}
			return outcome{kind: outModify, msg: r.message, ref: r.ref, input: out, explicit: true}
		default:
			return outcome{kind: outAllow, msg: r.message, ref: r.ref, explicit: true}
		}
	}
	if pol.evalSpec != nil {
		// The evaluator has its own timeout: its time does not count against the CEL deadline.
		start := time.Now()
		out := pol.callEvaluator(ctx, tc.req, tc.p.agentID, input)
		tc.run.extend(time.Since(start))
		return out
	}
	if pol.defaultDeny {
		return outcome{kind: outDeny, code: pol.defaultCode, msg: pol.defaultDenyM, ref: pol.defaultRef}
	}
	return outcome{kind: outAllow, ref: pol.defaultRef}
}

// callEvaluator asks the policy's external evaluator about req, with the input as earlier policies
// left it and the resolved agent id of the passport.
func (pol *cPolicy) callEvaluator(ctx context.Context, req *Request, agentID string, input map[string]any) outcome {
	ref := pol.id + "#external-evaluator"
	if pol.evaluator == nil {
		return outcome{kind: outError, ref: ref, err: fmt.Errorf("no client for external evaluator %s", pol.evalSpec.URL)}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, pol.evalTimeout)
	defer cancel()
	r := *req
	r.ToolInput = input
	r.AgentID = agentID
	v, err := pol.evaluator.Evaluate(ctx, r)
	if err != nil {
		return outcome{kind: outError, ref: ref, err: fmt.Errorf("external evaluator %s: %w", pol.evalSpec.URL, err)}
	}
	switch v.Decision {
	case DecisionAllow:
		return outcome{kind: outAllow, msg: v.Message, ref: ref, explicit: true}
	case DecisionDeny:
		code := v.Code
		if code == "" {
			code = CodePolicyDenied
		}
		msg := v.Message
		if msg == "" {
			msg = "denied by external evaluator"
		}
		return outcome{kind: outDeny, code: code, msg: msg, ref: ref, explicit: true}
	case DecisionModify:
		if v.ModifiedInput == nil {
			return outcome{kind: outError, ref: ref, err: fmt.Errorf("external evaluator %s: modify without modified_input", pol.evalSpec.URL)}
		}
		return outcome{kind: outModify, msg: v.Message, ref: ref, input: v.ModifiedInput, explicit: true}
	}
	return outcome{kind: outError, ref: ref, err: fmt.Errorf("external evaluator %s: unknown decision %q", pol.evalSpec.URL, v.Decision)}
}

// modify computes the rule's patch of input (copy-on-write: input itself is never changed).
func (r *cRule) modify(run *celRun, act *activation, input map[string]any) (map[string]any, error) {
	out := input
	for i := range r.sets {
		st := &r.sets[i]
		v, err := run.eval(st.prg, act)
		if err != nil {
			return nil, fmt.Errorf("set %s: %w", strings.Join(st.path, "."), err)
		}
		nv, err := celToNative(v)
		if err != nil {
			return nil, fmt.Errorf("set %s: %w", strings.Join(st.path, "."), err)
		}
		out = setPath(out, st.path, nv)
	}
	for _, path := range r.removes {
		out, _ = removePath(out, path)
	}
	if out == nil {
		out = map[string]any{}
	}
	return out, nil
}

// setPath returns a copy of m with path set to v; maps along the path are copied, others shared.
func setPath(m map[string]any, path []string, v any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, x := range m {
		out[k] = x
	}
	if len(path) == 1 {
		out[path[0]] = v
		return out
	}
	child, _ := m[path[0]].(map[string]any)
	out[path[0]] = setPath(child, path[1:], v)
	return out
}

// removePath returns m without path (copying maps along the path) and whether anything changed.
func removePath(m map[string]any, path []string) (map[string]any, bool) {
	if m == nil {
		return nil, false
	}
	var repl any
	if len(path) == 1 {
		if _, ok := m[path[0]]; !ok {
			return m, false
		}
	} else {
		child, ok := m[path[0]].(map[string]any)
		if !ok {
			return m, false
		}
		nc, changed := removePath(child, path[1:])
		if !changed {
			return m, false
		}
		repl = nc
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		out[k] = x
	}
	if len(path) == 1 {
		delete(out, path[0])
	} else {
		out[path[0]] = repl
	}
	return out, true
}
