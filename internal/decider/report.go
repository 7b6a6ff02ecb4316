package decider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// Defaults of ReporterOptions.
const (
	// DefaultReportInterval is how often a replica writes its DeciderReport.
	DefaultReportInterval = 10 * time.Second
	// DefaultReportMinGap is the least time between two writes: a new bundle revision is reported
	// early, but never sooner than this after the previous write.
	DefaultReportMinGap = time.Second
	// maxReportEntries bounds the policy and passport entries of one report (the rest is counted in
	// spec.truncated).
	maxReportEntries = 4000
	// maxReportMessage bounds an evaluation error's message in a report.
	maxReportMessage = 512
	// maxInternedCodes bounds the distinct deny codes remembered (codes chosen by policy authors and
	// external evaluators); later ones are reported as "other".
	maxInternedCodes = 1024
)

// ReporterOptions configures a Reporter.
type ReporterOptions struct {
	// Client writes the report (create, update); nil counts without writing (Snapshot still works).
	Client client.Client
	// Namespace is where the report lives (the decider's own namespace).
	Namespace string
	// Name is the report's name: the replica's pod name.
	Name string
	// PodUID, when set, makes the pod the report's owner, so the report goes with the pod.
	PodUID types.UID
	// Interval is the report interval (default DefaultReportInterval).
	Interval time.Duration
	// MinGap is the least time between two writes (default DefaultReportMinGap).
	MinGap time.Duration
	// Logger receives write failures (default slog.Default()).
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Reporter counts what the decision service decides, per policy and passport of the snapshot that
// answered, and writes the replica's DeciderReport once per interval (and early, at most once per
// MinGap, when a bundle revision changes). Counting is a few atomic additions on counters indexed by
// the snapshot's policy and passport numbers; each write swaps in fresh counters, so a report holds
// the counts since the previous one. Reports never carry tool arguments: an evaluation error's
// message has its quoted argument text redacted as the decision log does.
type Reporter struct {
	opts   ReporterOptions
	store  *Store
	cur    atomic.Pointer[reportWindow]
	codes  sync.Map // deny code -> *string
	nCodes atomic.Int32

	writes, failures atomic.Uint64
	rv               string // resourceVersion of the last write (Run's goroutine only)
}

// reportWindow is the counters of one interval, by snapshot.
type reportWindow struct {
	start time.Time
	mu    sync.Mutex // serialises adding a snapshot's counters
	snaps atomic.Pointer[map[*policy.Snapshot]*snapCounters]
}

// snapCounters are one snapshot's counters, indexed like its PolicyNames and PassportNames.
type snapCounters struct {
	snap      *policy.Snapshot
	policies  []policyCounters
	passports []passportCounters
}

type policyCounters struct {
	decisions, denies, errors, dryRunDenies atomic.Int64
	lastErr                                 atomic.Pointer[guardrailsv1alpha1.EvaluationErrorReport]
}

type passportCounters struct {
	denies, suspended atomic.Int64
	lastCode          atomic.Pointer[string]
}

// NewReporter returns a reporter of the decisions made from store's snapshots.
func NewReporter(store *Store, opts ReporterOptions) *Reporter {
	if opts.Interval <= 0 {
		opts.Interval = DefaultReportInterval
	}
	if opts.MinGap <= 0 {
		opts.MinGap = DefaultReportMinGap
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := &Reporter{opts: opts, store: store}
	r.cur.Store(newReportWindow(opts.Now()))
	return r
}

func newReportWindow(start time.Time) *reportWindow {
	w := &reportWindow{start: start}
	m := map[*policy.Snapshot]*snapCounters{}
	w.snaps.Store(&m)
	return w
}

// counters returns the window's counters of snap, adding them on first use.
func (w *reportWindow) counters(snap *policy.Snapshot) *snapCounters {
	if c, ok := (*w.snaps.Load())[snap]; ok {
		return c
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	m := *w.snaps.Load()
	if c, ok := m[snap]; ok {
		return c
	}
	c := &snapCounters{snap: snap,
		policies:  make([]policyCounters, len(snap.PolicyNames())),
		passports: make([]passportCounters, len(snap.PassportNames()))}
	next := maps.Clone(m)
	next[snap] = c
	w.snaps.Store(&next)
	return c
}

// count records one decision made from snap for req. It is safe for concurrent use and cheap: no
// lock, no allocation except an evaluation error's first sample of a window.
func (r *Reporter) count(snap *policy.Snapshot, d *policy.Decision, req *policy.Request) {
	if r == nil || snap == nil {
		return
	}
	c := r.cur.Load().counters(snap)
	code := ""
	if len(d.Reasons) > 0 {
		code = d.Reasons[0].Code
	}
	deny := d.Decision == policy.DecisionDeny
	if i := snap.PolicyIndex(d.PolicyID); i >= 0 && i < len(c.policies) {
		pc := &c.policies[i]
		pc.decisions.Add(1)
		if deny {
			pc.denies.Add(1)
			if code == policy.CodeEvaluatorError {
				r.evalError(pc, d.PolicyID, d.Reasons[0], req)
			}
		}
	}
	if m := d.Metadata; m != nil {
		for k := range m.DryRun {
			res := &m.DryRun[k]
			if i := snap.PolicyIndex(res.PolicyID); i >= 0 && i < len(c.policies) {
				if res.Decision == policy.DecisionDeny {
					c.policies[i].dryRunDenies.Add(1)
				}
				if res.Reason.Code == policy.CodeEvaluatorError {
					r.evalError(&c.policies[i], res.PolicyID, res.Reason, req)
				}
			}
		}
		for k := range m.Warnings {
			res := &m.Warnings[k]
			if res.Reason.Code != policy.CodeEvaluatorError {
				continue
			}
			if i := snap.PolicyIndex(res.PolicyID); i >= 0 && i < len(c.policies) {
				r.evalError(&c.policies[i], res.PolicyID, res.Reason, req)
			}
		}
	}
	if !deny {
		return
	}
	if i := snap.PassportIndex(req.Passport, req.AgentID); i >= 0 && i < len(c.passports) {
		pp := &c.passports[i]
		pp.denies.Add(1)
		if code == policy.CodePassportSuspended {
			pp.suspended.Add(1)
		}
		pp.lastCode.Store(r.intern(code))
	}
}

// evalError counts an evaluation error of pc and keeps the window's first sample: the rule and the
// message with quoted argument text redacted.
func (r *Reporter) evalError(pc *policyCounters, ref string, reason policy.Reason, req *policy.Request) {
	pc.errors.Add(1)
	if pc.lastErr.Load() != nil {
		return
	}
	red := redactor{input: req.ToolInput}
	msg := clipUTF8(red.message(reason), maxReportMessage)
	pc.lastErr.CompareAndSwap(nil, &guardrailsv1alpha1.EvaluationErrorReport{Rule: clipUTF8(ref, 400), Message: msg})
}

var otherCode = labelOther

// intern returns a shared pointer to code, so remembering the last deny code allocates nothing.
func (r *Reporter) intern(code string) *string {
	if p, ok := r.codes.Load(code); ok {
		return p.(*string)
	}
	if r.nCodes.Load() >= maxInternedCodes {
		return &otherCode
	}
	c := clipUTF8(code, 128)
	p, loaded := r.codes.LoadOrStore(code, &c)
	if !loaded {
		r.nCodes.Add(1)
	}
	return p.(*string)
}

// Snapshot closes the current window and returns the report of it, as of now: the revision of every
// loaded namespace and the window's counts. The next window starts now.
func (r *Reporter) Snapshot() guardrailsv1alpha1.DeciderReportSpec {
	now := r.opts.Now()
	old := r.cur.Swap(newReportWindow(now))
	spec := guardrailsv1alpha1.DeciderReportSpec{
		HeartbeatTime:   metav1.NewMicroTime(now),
		WindowStart:     metav1.NewMicroTime(old.start),
		IntervalSeconds: int32(max(1, (r.opts.Interval+time.Second-1)/time.Second)),
	}
	byNS := map[string][]*snapCounters{}
	for _, c := range *old.snaps.Load() {
		byNS[c.snap.Namespace()] = append(byNS[c.snap.Namespace()], c)
	}
	budget := maxReportEntries
	for _, st := range r.store.Status() {
		if st.Revision == "" {
			continue
		}
		nr := guardrailsv1alpha1.NamespaceReport{Namespace: st.Namespace, Revision: st.Revision}
		pols, passes := mergeCounters(byNS[st.Namespace])
		for _, p := range pols {
			if budget == 0 {
				spec.Truncated++
				continue
			}
			budget--
			nr.Policies = append(nr.Policies, p)
		}
		for _, p := range passes {
			if budget == 0 {
				spec.Truncated++
				continue
			}
			budget--
			nr.Passports = append(nr.Passports, p)
		}
		spec.Namespaces = append(spec.Namespaces, nr)
	}
	spec.NamespaceCount = int32(len(spec.Namespaces))
	return spec
}

// mergeCounters adds up the counters of one namespace's snapshots (a window may span a bundle
// swap) by policy and passport name, leaving out those with nothing to report, sorted by name.
func mergeCounters(cs []*snapCounters) ([]guardrailsv1alpha1.PolicyReport, []guardrailsv1alpha1.PassportReport) {
	pols := map[string]*guardrailsv1alpha1.PolicyReport{}
	passes := map[string]*guardrailsv1alpha1.PassportReport{}
	for _, c := range cs {
		names := c.snap.PolicyNames()
		for i := range c.policies {
			pc := &c.policies[i]
			dec, den, errs, dry := pc.decisions.Load(), pc.denies.Load(), pc.errors.Load(), pc.dryRunDenies.Load()
			if dec == 0 && errs == 0 && dry == 0 {
				continue
			}
			p := pols[names[i]]
			if p == nil {
				p = &guardrailsv1alpha1.PolicyReport{Name: names[i]}
				pols[names[i]] = p
			}
			p.Decisions += dec
			p.Denies += den
			p.EvaluationErrors += errs
			p.DryRunDenies += dry
			if e := pc.lastErr.Load(); e != nil {
				p.LastError = e
			}
		}
		pnames := c.snap.PassportNames()
		for i := range c.passports {
			pp := &c.passports[i]
			den := pp.denies.Load()
			if den == 0 {
				continue
			}
			p := passes[pnames[i]]
			if p == nil {
				p = &guardrailsv1alpha1.PassportReport{Name: pnames[i]}
				passes[pnames[i]] = p
			}
			p.Denies += den
			p.SuspendedDenies += pp.suspended.Load()
			if code := pp.lastCode.Load(); code != nil {
				p.LastDenyCode = *code
			}
		}
	}
	outP := make([]guardrailsv1alpha1.PolicyReport, 0, len(pols))
	for _, name := range slices.Sorted(maps.Keys(pols)) {
		outP = append(outP, *pols[name])
	}
	outA := make([]guardrailsv1alpha1.PassportReport, 0, len(passes))
	for _, name := range slices.Sorted(maps.Keys(passes)) {
		outA = append(outA, *passes[name])
	}
	return outP, outA
}

// Writes returns how many reports were written; Failures how many writes failed.
func (r *Reporter) Writes() uint64 { return r.writes.Load() }

// Failures returns how many report writes failed.
func (r *Reporter) Failures() uint64 { return r.failures.Load() }

// Run writes the report every interval, and early (at most once per MinGap) when the store serves a
// new bundle revision, until ctx is done. Write failures are logged and retried at the next tick.
func (r *Reporter) Run(ctx context.Context) error {
	if r.opts.Client == nil || r.opts.Name == "" || r.opts.Namespace == "" {
		return errors.New("decider report: a client, a name and a namespace are required")
	}
	tick := time.NewTicker(r.opts.Interval)
	defer tick.Stop()
	var last time.Time
	var early <-chan time.Time
	var earlyTimer *time.Timer
	write := func() {
		if err := r.write(ctx); err != nil && ctx.Err() == nil {
			r.failures.Add(1)
			r.opts.Logger.Error("writing the decider report failed", "report", r.opts.Namespace+"/"+r.opts.Name, "err", err)
		}
		last = time.Now()
		early = nil
	}
	write()
	for {
		select {
		case <-ctx.Done():
			if earlyTimer != nil {
				earlyTimer.Stop()
			}
			return nil
		case <-tick.C:
			write()
		case <-r.store.changed:
			if early == nil {
				earlyTimer = time.NewTimer(max(0, time.Until(last.Add(r.opts.MinGap))))
				early = earlyTimer.C
			}
		case <-early:
			write()
			tick.Reset(r.opts.Interval)
		}
	}
}

// write closes the window and creates or updates the report.
func (r *Reporter) write(ctx context.Context) error {
	rep := &guardrailsv1alpha1.DeciderReport{
		ObjectMeta: metav1.ObjectMeta{Name: r.opts.Name, Namespace: r.opts.Namespace, ResourceVersion: r.rv,
			Labels: map[string]string{"app.kubernetes.io/name": "tollgate", "app.kubernetes.io/component": "decider"}},
		Spec: r.Snapshot(),
	}
	if r.opts.PodUID != "" {
		rep.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: r.opts.Name, UID: r.opts.PodUID}}
	}
	err := r.put(ctx, rep)
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		// Someone else wrote it (an earlier process of this pod) or it was deleted: start over.
		var cur guardrailsv1alpha1.DeciderReport
		r.rv = ""
		if gerr := r.opts.Client.Get(ctx, client.ObjectKeyFromObject(rep), &cur); gerr == nil {
			r.rv = cur.ResourceVersion
		}
		rep.ResourceVersion = r.rv
		err = r.put(ctx, rep)
	}
	if err != nil {
		return err
	}
	r.rv = rep.ResourceVersion
	r.writes.Add(1)
	return nil
}

func (r *Reporter) put(ctx context.Context, rep *guardrailsv1alpha1.DeciderReport) error {
	if rep.ResourceVersion == "" {
		err := r.opts.Client.Create(ctx, rep)
		if apierrors.IsAlreadyExists(err) {
			return apierrors.NewConflict(guardrailsv1alpha1.GroupVersion.WithResource("deciderreports").GroupResource(), rep.Name, err)
		}
		if err != nil {
			return fmt.Errorf("creating DeciderReport %s/%s: %w", rep.Namespace, rep.Name, err)
		}
		return nil
	}
	if err := r.opts.Client.Update(ctx, rep); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return err
		}
		return fmt.Errorf("updating DeciderReport %s/%s: %w", rep.Namespace, rep.Name, err)
	}
	return nil
}

// ReportName returns a report name for a replica outside a pod: the host name, lowercased and
// limited to the characters of an object name.
func ReportName(host string) string {
	b := make([]byte, 0, len(host))
	for _, c := range []byte(strings.ToLower(host)) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '.':
			b = append(b, c)
		default:
			b = append(b, '-')
		}
	}
	s := strings.Trim(string(b), "-.")
	if len(s) > 253 {
		s = s[:253]
	}
	if s == "" {
		return "decider"
	}
	return s
}
