package policy

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// enforcement actions as integers.
const (
	enfEnforce = iota
	enfDryRun
	enfWarn
)

// rule actions as integers.
const (
	actAllow = iota
	actDeny
	actModify
)

// cRule is a compiled rule.
type cRule struct {
	name    string
	ref     string // policyID#name
	tools   toolSet
	when    *celProgram
	action  int
	code    string
	message string
	sets    []cSet
	removes [][]string
}

type cSet struct {
	path []string
	prg  *celProgram
}

type cRequire struct {
	name    string
	ref     string
	tools   toolSet
	prg     *celProgram
	code    string
	message string
}

type cRateLimit struct {
	name string
	ref  string
	key  string // namespace/policy/limit: the limiter key, stable across snapshots
	// keyNoThread counts per-thread calls that name no thread (per passport).
	keyNoThread string
	msg         string
	tools       toolSet
	limit       int64
	window      time.Duration
	thread      bool
}

type cToolCap struct {
	glob glob
	cap  string
}

// cPolicy is a compiled policy.
type cPolicy struct {
	name         string
	id           string
	cluster      bool // a ClusterGuardrailPolicy (Policy.ClusterScoped)
	enforcement  int
	failOpen     bool
	defaultDeny  bool
	priority     int32
	selector     labels.Selector // nil selects every passport
	rules        []cRule
	byTool       map[string][]int32 // exact tool name -> rules matching it, in order
	globRules    []int32            // rules with wildcard tools, in order
	requires     []cRequire
	rateLimits   []cRateLimit
	budgets      []cBudget
	toolCaps     []cToolCap
	input        cGuards     // input guards: text entering the model's context
	inputHooks   hookSet     // the hooks the input guards screen at
	output       cGuards     // output patterns: the text of an LLM response
	detectors    []cDetector // safety-termination detectors of LLM responses
	evalSpec     *ExternalEvaluatorSpec
	evaluator    Evaluator
	evalTimeout  time.Duration
	defaultRef   string
	defaultCode  string // reason code of a defaultAction Deny
	defaultDenyM string
}

// ValidatePolicy validates one policy spec as Compile would (its expressions and patterns compiled
// against the per-policy budgets); paths start with "spec.".
func ValidatePolicy(p PolicySpec) field.ErrorList {
	cc, err := newCELCompiler()
	if err != nil {
		return field.ErrorList{invalidField("spec", err.Error())}
	}
	_, fe := compilePolicy(cc, "", "", p, false)
	return fe
}

// compilePolicy validates and compiles spec; errors have paths relative to the object ("spec.…").
func compilePolicy(cc *celCompiler, namespace, name string, spec PolicySpec, cluster bool) (*cPolicy, field.ErrorList) {
	var e errs
	idNamespace := namespace
	if cluster {
		idNamespace = "" // the default policy id of cluster/<name> is its name
	}
	cp := compileSettings(&e, idNamespace, name, spec)
	cp.cluster = cluster
	cp.compileToolCaps(&e, spec)
	x := newExprCompiler(cc, &e)
	cp.compileRules(x, spec)
	cp.compileRequires(x, spec)
	cp.compileRateLimits(&e, namespace, name, spec)
	cp.compileBudgets(&e, namespace, name, spec)
	cp.compileGuards(&e, cc, spec)
	cp.compileEvaluator(&e, spec.ExternalEvaluator)
	return cp, e.list
}

// compileSettings reads the policy-wide settings: id, enforcement, failure policy, default
// action, priority and passport selector.
func compileSettings(e *errs, namespace, name string, spec PolicySpec) *cPolicy {
	cp := &cPolicy{name: name, priority: spec.Priority}
	cp.id = spec.PolicyID
	if cp.id == "" {
		cp.id = name
		if namespace != "" {
			cp.id = namespace + "/" + name
		}
	} else {
		e.pattern("spec.policyID", spec.PolicyID, rePolicyID, 128)
	}
	cp.defaultRef = cp.id
	cp.defaultDenyM = "no rule of policy " + cp.id + " matched and its defaultAction is Deny"
	switch spec.EnforcementAction {
	case "", EnforcementEnforce:
		cp.enforcement = enfEnforce
	case EnforcementDryRun:
		cp.enforcement = enfDryRun
	case EnforcementWarn:
		cp.enforcement = enfWarn
	default:
		e.enum("spec.enforcementAction", spec.EnforcementAction, []string{EnforcementEnforce, EnforcementDryRun, EnforcementWarn})
	}
	switch spec.FailurePolicy {
	case "", FailClosed:
	case FailOpen:
		cp.failOpen = true
	default:
		e.enum("spec.failurePolicy", spec.FailurePolicy, []string{FailClosed, FailOpen})
	}
	switch spec.DefaultAction {
	case "", ActionAllow:
	case ActionDeny:
		cp.defaultDeny = true
	default:
		e.enum("spec.defaultAction", spec.DefaultAction, []string{ActionAllow, ActionDeny})
	}
	if spec.Priority < -1000 || spec.Priority > 1000 {
		e.add("spec.priority", "must be between -1000 and 1000")
	}
	if spec.PassportSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(spec.PassportSelector)
		if err != nil {
			e.add("spec.passportSelector", "%v", err)
		} else if !sel.Empty() {
			cp.selector = sel
		}
	}
	return cp
}

// compileToolCaps reads the toolCapabilities overrides.
func (cp *cPolicy) compileToolCaps(e *errs, spec PolicySpec) {
	seenTool := map[string]bool{}
	for i, tc := range spec.ToolCapabilities {
		base := fmt.Sprintf("spec.toolCapabilities[%d]", i)
		switch {
		case tc.Tool == "":
			e.required(base + ".tool")
		case seenTool[tc.Tool]:
			e.add(base+".tool", "duplicate tool %q", tc.Tool)
		}
		seenTool[tc.Tool] = true
		e.pattern(base+".capability", tc.Capability, reCapabilityID, 128)
		cp.toolCaps = append(cp.toolCaps, cToolCap{glob: compileGlob(tc.Tool), cap: tc.Capability})
	}
}

// exprCompiler compiles a policy's CEL expressions against the policy's compile budget (its
// distinct expressions' length and check work) and cost budget (the sum of their estimated costs,
// MaxPolicyCost). Once a budget is spent the expressions after it are not compiled (the policy is
// invalid anyway): that bounds the compile work of a policy.
type exprCompiler struct {
	cc     *celCompiler
	e      *errs
	budget *compileBudget
	cost   uint64
	spent  bool
}

func newExprCompiler(cc *celCompiler, e *errs) *exprCompiler {
	return &exprCompiler{cc: cc, e: e, budget: newCompileBudget("policy", MaxPolicyExpressionBytes, MaxPolicyCheckWork)}
}

// compile compiles the expression at path; nil when it is invalid (the error is recorded).
func (x *exprCompiler) compile(path, expr string, wantBool bool) *celProgram {
	if x.spent {
		return nil
	}
	prg, msg, spent := x.cc.compile(expr, wantBool, x.budget)
	if msg != "" {
		x.spent = spent
		x.e.add(path, "%s", msg)
		return nil
	}
	x.cost = addSat(x.cost, prg.cost)
	if x.cost > MaxPolicyCost {
		x.spent = true
		x.e.add(path, "estimated cost of the policy's expressions reaches %s here, over the per-policy budget %s",
			formatCost(x.cost), formatCost(MaxPolicyCost))
		return nil
	}
	return prg
}

// compileRules compiles the ordered rules and indexes them by tool name.
func (cp *cPolicy) compileRules(x *exprCompiler, spec PolicySpec) {
	if len(spec.Rules) > 256 {
		x.e.add("spec.rules", "at most 256 rules are allowed")
	}
	seen := map[string]bool{}
	for i, r := range spec.Rules {
		cp.rules = append(cp.rules, cp.compileRule(x, fmt.Sprintf("spec.rules[%d]", i), r, seen))
	}
	cp.indexRules()
}

// compileRule validates and compiles spec.rules[i] (base is its path).
func (cp *cPolicy) compileRule(x *exprCompiler, base string, r Rule, seen map[string]bool) cRule {
	e := x.e
	validateName(e, base+".name", r.Name, seen)
	validateTools(e, base+".tools", r.Tools, true)
	cr := cRule{name: r.Name, ref: cp.id + "#" + r.Name, tools: compileToolSet(r.Tools, false),
		code: r.Code, message: r.Message}
	switch r.Action {
	case ActionAllow:
		cr.action = actAllow
	case ActionDeny:
		cr.action = actDeny
	case ActionModify:
		cr.action = actModify
	case "":
		e.required(base + ".action")
	default:
		e.enum(base+".action", r.Action, []string{ActionAllow, ActionDeny, ActionModify})
	}
	if r.When != "" {
		cr.when = x.compile(base+".when", r.When, true)
	}
	if r.Code != "" {
		e.pattern(base+".code", r.Code, reReasonCode, 64)
		if r.Action != ActionDeny {
			e.add(base+".code", "code is only meaningful with action Deny")
		}
	}
	if len(r.Message) > 1024 {
		e.add(base+".message", "must be at most 1024 characters")
	}
	switch {
	case r.Action == ActionModify && r.Modify == nil:
		e.add(base+".modify", "required with action Modify")
	case r.Action != ActionModify && r.Modify != nil:
		e.add(base+".modify", "only allowed with action Modify")
	case r.Modify != nil:
		if len(r.Modify.Set) == 0 && len(r.Modify.Remove) == 0 {
			e.add(base+".modify", "must set or remove at least one field")
		}
		seenPath := map[string]bool{}
		for j, f := range r.Modify.Set {
			fp := fmt.Sprintf("%s.modify.set[%d]", base, j)
			e.pattern(fp+".path", f.Path, reFieldPath, 256)
			if seenPath[f.Path] {
				e.add(fp+".path", "duplicate path %q", f.Path)
			}
			seenPath[f.Path] = true
			prg := x.compile(fp+".value", f.Value, false)
			cr.sets = append(cr.sets, cSet{path: strings.Split(f.Path, "."), prg: prg})
		}
		for j, rm := range r.Modify.Remove {
			e.pattern(fmt.Sprintf("%s.modify.remove[%d]", base, j), rm, reFieldPath, 256)
			cr.removes = append(cr.removes, strings.Split(rm, "."))
		}
	}
	if cr.action == actDeny {
		if cr.code == "" {
			cr.code = CodePolicyDenied
		}
		if cr.message == "" {
			cr.message = "denied by rule " + r.Name + " of policy " + cp.id
		}
	}
	return cr
}

// compileRequires compiles the requirements.
func (cp *cPolicy) compileRequires(x *exprCompiler, spec PolicySpec) {
	e := x.e
	seen := map[string]bool{}
	for i, r := range spec.Requires {
		base := fmt.Sprintf("spec.requires[%d]", i)
		validateName(e, base+".name", r.Name, seen)
		validateTools(e, base+".tools", r.Tools, false)
		prg := x.compile(base+".expression", r.Expression, true)
		if r.Code == "" {
			e.required(base + ".code")
		} else {
			e.pattern(base+".code", r.Code, reReasonCode, 64)
		}
		msgText := r.Message
		if msgText == "" {
			msgText = "requirement " + r.Name + " of policy " + cp.id + " does not hold"
		}
		cp.requires = append(cp.requires, cRequire{name: r.Name, ref: cp.id + "#" + r.Name,
			tools: compileToolSet(r.Tools, true), prg: prg, code: r.Code, message: msgText})
	}
}

// compileRateLimits reads the rate limits; counters are keyed by namespace, policy and limit.
func (cp *cPolicy) compileRateLimits(e *errs, namespace, name string, spec PolicySpec) {
	seen := map[string]bool{}
	for i, r := range spec.RateLimits {
		base := fmt.Sprintf("spec.rateLimits[%d]", i)
		validateName(e, base+".name", r.Name, seen)
		validateTools(e, base+".tools", r.Tools, false)
		if r.Limit < 1 || r.Limit > 1_000_000 {
			e.add(base+".limit", "must be between 1 and 1000000")
		}
		w, err := parsePositiveDuration(r.Window)
		if err != nil {
			e.add(base+".window", "%v", err)
		}
		thread := false
		switch r.Per {
		case "", PerPassport:
		case PerThread:
			thread = true
		default:
			e.enum(base+".per", r.Per, []string{PerPassport, PerThread})
		}
		key := namespace + "/" + name + "/" + r.Name
		cp.rateLimits = append(cp.rateLimits, cRateLimit{name: r.Name, ref: cp.id + "#" + r.Name,
			key: key, keyNoThread: key + "\x00no-thread", tools: compileToolSet(r.Tools, true),
			limit: int64(r.Limit), window: w, thread: thread,
			msg: fmt.Sprintf("rate limit %s of policy %s exceeded: %d calls per %s", r.Name, cp.id, r.Limit, r.Window)})
	}
}

// compileEvaluator reads the external evaluator.
func (cp *cPolicy) compileEvaluator(e *errs, ev *ExternalEvaluatorSpec) {
	if ev == nil {
		return
	}
	validateURL(e, "spec.externalEvaluator.url", ev.URL)
	cp.evalTimeout = DefaultEvaluatorTimeout
	if ev.Timeout != "" {
		d, err := parsePositiveDuration(ev.Timeout)
		if err != nil {
			e.add("spec.externalEvaluator.timeout", "%v", err)
		} else {
			cp.evalTimeout = d
		}
	}
	copied := *ev
	cp.evalSpec = &copied
}

// indexRules builds the exact-tool-name index and the wildcard fallback list.
func (p *cPolicy) indexRules() {
	p.byTool = map[string][]int32{}
	for i := range p.rules {
		r := &p.rules[i]
		wild := r.tools.all
		for _, g := range r.tools.globs {
			if g.exact {
				p.byTool[g.raw] = nil
			} else {
				wild = true
			}
		}
		if wild {
			p.globRules = append(p.globRules, int32(i))
		}
	}
	for name := range p.byTool {
		var idx []int32
		for i := range p.rules {
			if p.rules[i].tools.match(name) {
				idx = append(idx, int32(i))
			}
		}
		p.byTool[name] = idx
	}
}

// policySet is the ordered list of policies selecting a group of passports, with their merged
// toolCapabilities overrides. Passports selected by the same policies share one set.
type policySet struct {
	policies []*cPolicy
	capExact map[string]capHit
	capGlobs []capGlob // sorted by order
}

type capHit struct {
	order int
	cap   string
}

type capGlob struct {
	order int
	glob  glob
	cap   string
}

func newPolicySet(policies []*cPolicy) *policySet {
	ps := &policySet{policies: policies}
	// Cluster policies' toolCapabilities come first (a namespace cannot remap a tool a cluster
	// policy maps), then the namespace's, each group in evaluation order.
	ordered := make([]*cPolicy, 0, len(policies))
	for _, cluster := range []bool{true, false} {
		for _, p := range policies {
			if p.cluster == cluster {
				ordered = append(ordered, p)
			}
		}
	}
	for order, p := range ordered {
		for _, tc := range p.toolCaps {
			if tc.glob.exact {
				if ps.capExact == nil {
					ps.capExact = map[string]capHit{}
				}
				if _, ok := ps.capExact[tc.glob.raw]; !ok {
					ps.capExact[tc.glob.raw] = capHit{order, tc.cap}
				}
			} else {
				ps.capGlobs = append(ps.capGlobs, capGlob{order, tc.glob, tc.cap})
			}
		}
	}
	return ps
}

// capability returns the capability a tool call needs: policies' toolCapabilities in policy order
// (a policy's exact names before its globs), then the built-in table, then system.command.execute
// for any other tool whose input carries a command field. (A call carrying a command also needs
// system.command.execute whatever its tool maps to: see decideTool.) hasCommand says whether input
// carries a command field.
func (ps *policySet) capability(tool string, input map[string]any, hasCommand bool) (string, bool) {
	if isEditorCall(tool, input) {
		if input["command"] == "view" {
			return CapFileRead, true
		}
		return CapFileWrite, true
	}
	best := -1
	var bestCap string
	if h, ok := ps.capExact[tool]; ok {
		best, bestCap = h.order, h.cap
	}
	for i := range ps.capGlobs {
		g := &ps.capGlobs[i]
		if best >= 0 && g.order >= best {
			break
		}
		if g.glob.match(tool) {
			return g.cap, true
		}
	}
	if best >= 0 {
		return bestCap, true
	}
	if c, ok := BuiltinToolCapability(tool); ok {
		return c, true
	}
	if hasCommand {
		return CapCommandExecute, true
	}
	return "", false
}

// cPassport is a compiled passport.
type cPassport struct {
	src     Passport
	agentID string
	status  string
	expires time.Time // zero when none
	caps    map[string]struct{}
	limits  passportLimits
	// allowUnmapped lets tools that map to no capability through (spec.unmappedTools: Allow).
	allowUnmapped bool
	set           *policySet

	digestOnce sync.Once
	digest     string
	celOnce    sync.Once
	cel        map[string]any
}

func (p *cPassport) passportDigest() string {
	p.digestOnce.Do(func() { p.digest = PassportDigest(p.src) })
	return p.digest
}

// celValue is the passport as the CEL variable `passport`, built on first use.
func (p *cPassport) celValue() map[string]any {
	p.celOnce.Do(func() {
		caps := make(map[string]any, len(p.src.Spec.Capabilities))
		for _, c := range p.src.Spec.Capabilities {
			params := any(emptyMap)
			if c.Params != nil {
				params = c.Params
			}
			caps[c.ID] = params
		}
		lbls := make(map[string]any, len(p.src.Labels))
		for k, v := range p.src.Labels {
			lbls[k] = v
		}
		regions := make([]any, 0, len(p.src.Spec.Regions))
		for _, r := range p.src.Spec.Regions {
			regions = append(regions, r)
		}
		sas := make([]any, 0, len(p.src.Spec.Subjects.ServiceAccounts))
		for _, s := range p.src.Spec.Subjects.ServiceAccounts {
			sas = append(sas, s)
		}
		limits := any(emptyMap)
		if p.src.Spec.Limits != nil {
			limits = p.src.Spec.Limits
		}
		m := map[string]any{
			"name":            p.src.Name,
			"namespace":       p.src.Namespace,
			"labels":          lbls,
			"agentID":         p.agentID,
			"owner":           map[string]any{"id": p.src.Spec.Owner.ID, "type": p.src.Spec.Owner.Type},
			"assuranceLevel":  p.src.Spec.AssuranceLevel,
			"status":          p.status,
			"capabilities":    caps,
			"limits":          limits,
			"regions":         regions,
			"serviceAccounts": sas,
		}
		if !p.expires.IsZero() {
			m["expiresAt"] = p.expires
		}
		p.cel = celScalars(m)
	})
	return p.cel
}

func compilePassport(src Passport, limits passportLimits) *cPassport {
	cp := &cPassport{src: src, agentID: src.Spec.AgentID, status: src.Spec.Status}
	if cp.agentID == "" {
		cp.agentID = src.UID
	}
	if cp.status == "" {
		cp.status = DefaultPassportStatus
	}
	if src.Spec.ExpiresAt != nil {
		cp.expires = *src.Spec.ExpiresAt
	}
	cp.caps = make(map[string]struct{}, len(src.Spec.Capabilities))
	for _, c := range src.Spec.Capabilities {
		cp.caps[c.ID] = struct{}{}
	}
	cp.limits = limits
	cp.allowUnmapped = src.Spec.UnmappedTools == UnmappedAllow
	return cp
}

// Snapshot is an immutable compiled bundle. Decide and the accessors are safe for concurrent use.
type Snapshot struct {
	revision  string
	namespace string
	clock     func() time.Time
	ttl       time.Duration
	deadline  time.Duration // evaluation deadline of one decision
	counters  CounterStore
	idPrefix  string
	seq       atomic.Uint64

	passports map[string]*cPassport // by name
	byAgentID map[string]*cPassport
	selected  map[string]int // policy name -> selected passports
	ruleCount map[string]int
	emptySet  *policySet
	analyses  *analysisCache // shell analyses of recent commands

	saOnce sync.Once
	bySA   map[string][]string // ServiceAccount -> passports listing it (PassportsForServiceAccount)

	compiled []*cPolicy  // every policy, by priority
	report   reportIndex // numbering of policies and passports for reports (report.go)
}

// Compile validates and compiles b into a Snapshot. On failure the error is a *CompileError listing
// every problem with its field path.
func Compile(b Bundle, opts ...Option) (*Snapshot, error) {
	o := options{clock: time.Now, ttl: DefaultDecisionTTL}
	for _, opt := range opts {
		opt(&o)
	}
	if o.deadline <= 0 {
		o.deadline = DefaultEvalDeadline
	}
	if o.clock == nil {
		o.clock = time.Now
	}
	if o.counters == nil {
		o.counters = NewMemoryCounters(DefaultCounterKeys)
	}
	var bundleErrs errs
	if b.Version != "" && b.Version != BundleVersion {
		bundleErrs.add("version", "unsupported bundle version %q: want %q", b.Version, BundleVersion)
	}
	var objErrs []ObjectError
	report := func(kind, name string, i int, e errs) {
		if len(e.list) > 0 {
			objErrs = append(objErrs, ObjectError{Kind: kind, Name: name, Index: i, Errors: e.list})
		}
	}
	cc, err := newCELCompiler()
	if err != nil {
		return nil, fmt.Errorf("compile bundle: %w", err)
	}
	s := &Snapshot{
		revision:  b.Revision(),
		namespace: b.Namespace,
		clock:     o.clock,
		ttl:       o.ttl,
		deadline:  o.deadline,
		counters:  o.counters,
		idPrefix:  newIDPrefix(),
		passports: make(map[string]*cPassport, len(b.Passports)),
		byAgentID: make(map[string]*cPassport, len(b.Passports)),
		selected:  make(map[string]int, len(b.Policies)),
		ruleCount: make(map[string]int, len(b.Policies)),
		emptySet:  newPolicySet(nil),
		analyses:  newAnalysisCache(),
	}

	// Policies.
	policies := make([]*cPolicy, 0, len(b.Policies))
	for i := range b.Policies {
		p := &b.Policies[i]
		var e errs
		_, dup := s.ruleCount[p.Name]
		checkObject(&e, "policy", p.Name, dup, p.Namespace, b.Namespace)
		ns := p.Namespace
		if ns == "" {
			ns = b.Namespace
		}
		cp, fe := compilePolicy(cc, ns, p.Name, p.Spec, p.ClusterScoped)
		e.list = append(e.list, fe...)
		report(KindPolicy, p.Name, i, e)

		if cp.evalSpec != nil && o.evaluators != nil {
			cp.evaluator = o.evaluators(*cp.evalSpec)
		}
		s.ruleCount[p.Name] = len(cp.rules)
		s.selected[p.Name] = 0
		policies = append(policies, cp)
	}
	sort.SliceStable(policies, func(i, j int) bool {
		// Cluster policies last: they judge the input the namespace's policies leave.
		if policies[i].cluster != policies[j].cluster {
			return policies[j].cluster
		}
		if policies[i].priority != policies[j].priority {
			return policies[i].priority > policies[j].priority
		}
		return policies[i].name < policies[j].name
	})

	// Passports, grouped by label set so selectors are matched once per distinct set.
	groups := map[string]*policySet{}
	sets := map[string]*policySet{}
	for i := range b.Passports {
		p := &b.Passports[i]
		var e errs
		_, dup := s.passports[p.Name]
		checkObject(&e, "passport", p.Name, dup, p.Namespace, b.Namespace)
		fe, limits := checkPassport(p.Spec)
		e.list = append(e.list, fe...)
		cp := compilePassport(*p, limits)
		if cp.agentID != "" {
			if other, dup := s.byAgentID[cp.agentID]; dup {
				e.add("spec.agentID", "%s", DuplicateAgentIDMessage(cp.agentID, other.src.Name))
			} else {
				s.byAgentID[cp.agentID] = cp
			}
		}
		report(KindPassport, p.Name, i, e)
		lk := labelKey(p.Labels)
		set, ok := groups[lk]
		if !ok {
			set = selectSet(policies, p.Labels, sets, s.emptySet)
			groups[lk] = set
		}
		cp.set = set
		for _, pol := range set.policies {
			s.selected[pol.name]++
		}
		if p.Name != "" {
			s.passports[p.Name] = cp
		}
	}
	if len(bundleErrs.list) > 0 || len(objErrs) > 0 {
		return nil, &CompileError{Bundle: bundleErrs.list, Objects: objErrs}
	}
	s.compiled = policies
	return s, nil
}

// selectSet returns the (shared) policy set of the policies selecting a passport with lbls.
func selectSet(policies []*cPolicy, lbls map[string]string, sets map[string]*policySet, empty *policySet) *policySet {
	var sel []*cPolicy
	var key []byte
	ls := labels.Set(lbls)
	for i, p := range policies {
		if p.selector == nil || p.selector.Matches(ls) {
			sel = append(sel, p)
			key = binary.AppendUvarint(key, uint64(i))
		}
	}
	if len(sel) == 0 {
		return empty
	}
	if set, ok := sets[string(key)]; ok {
		return set
	}
	set := newPolicySet(sel)
	sets[string(key)] = set
	return set
}

// labelKey is a canonical key of a label set. Labels in a bundle are not necessarily validated by an
// API server (files, the CLI), so entries are separated by NUL rather than trusting that keys and
// values never contain the separators labels.Set.String uses.
func labelKey(l map[string]string) string {
	if len(l) == 0 {
		return ""
	}
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		sb.WriteString(k)
		sb.WriteByte('=')
		sb.WriteString(l[k])
		sb.WriteByte(0)
	}
	return sb.String()
}

// checkObject checks the name and namespace of a bundle's object; duplicate says an earlier object
// of the same kind has the name.
func checkObject(e *errs, kind, name string, duplicate bool, namespace, bundleNamespace string) {
	if name == "" {
		e.required("name")
	} else if duplicate {
		e.add("name", "duplicate %s name %q", kind, name)
	}
	if namespace != "" && bundleNamespace != "" && namespace != bundleNamespace {
		e.add("namespace", "namespace %q differs from the bundle namespace %q", namespace, bundleNamespace)
	}
}

// DuplicateAgentIDMessage says that a passport's effective agent id is already used by the
// passport named owner (spec.agentID's problem).
func DuplicateAgentIDMessage(agentID, owner string) string {
	return fmt.Sprintf("agent id %q is also used by passport %q", agentID, owner)
}

func newIDPrefix() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		binary.BigEndian.PutUint32(b[:], uint32(time.Now().UnixNano()))
	}
	return hex.EncodeToString(b[:]) + "-"
}

// Revision is the bundle revision the snapshot was compiled from.
func (s *Snapshot) Revision() string { return s.revision }

// Namespace is the bundle namespace.
func (s *Snapshot) Namespace() string { return s.namespace }

// Passport returns the passport named name ("name" or "namespace/name"). The result shares maps
// with the snapshot and must not be modified.
func (s *Snapshot) Passport(name string) (Passport, bool) {
	p := s.lookup(name)
	if p == nil {
		return Passport{}, false
	}
	return p.src, true
}

// PassportByAgentID returns the passport whose effective agent id (spec.agentID or UID) is id.
func (s *Snapshot) PassportByAgentID(id string) (Passport, bool) {
	p, ok := s.byAgentID[id]
	if !ok {
		return Passport{}, false
	}
	return p.src, true
}

// SelectedPassports returns how many passports the named policy selects.
func (s *Snapshot) SelectedPassports(policyName string) int { return s.selected[policyName] }

// RuleCount returns the number of rules of the named policy.
func (s *Snapshot) RuleCount(policyName string) int { return s.ruleCount[policyName] }

func (s *Snapshot) lookup(ref string) *cPassport {
	if ns, name, ok := strings.Cut(ref, "/"); ok {
		if ns != s.namespace {
			return nil
		}
		ref = name
	}
	return s.passports[ref]
}
