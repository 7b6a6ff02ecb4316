package controller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// staleIntervals is how many report intervals after its heartbeat a DeciderReport stops counting.
const staleIntervals = 3

// maxRevisionHistory is how many bundle revisions per namespace the controllers remember, to map
// the revision a replica reports to the policy generations it holds.
const maxRevisionHistory = 32

// reportView is the controllers' view of the decider replicas' DeciderReports: the latest report of
// each replica and, per passport, the denies reported over time (for autoSuspend). It is owned by
// one Setup call; all methods are safe for concurrent use.
type reportView struct {
	mu      sync.RWMutex
	reports map[string]*guardrailsv1alpha1.DeciderReportSpec // by report name
	folded  map[string]time.Time                             // report name -> heartbeat whose denies are counted
	denials map[types.NamespacedName]*denialLog
}

// denialLog is a passport's reported denies (oap.passport_suspended ones aside), oldest first.
type denialLog struct {
	since   time.Time // denies reported before it are forgotten (the last suspension or lift)
	samples []denialSample
}

type denialSample struct {
	at   time.Time
	n    int64
	code string
}

func newReportView() *reportView {
	return &reportView{reports: map[string]*guardrailsv1alpha1.DeciderReportSpec{},
		folded: map[string]time.Time{}, denials: map[types.NamespacedName]*denialLog{}}
}

// live reports whether a report with this heartbeat and interval still counts at now.
func live(spec *guardrailsv1alpha1.DeciderReportSpec, now time.Time) bool {
	interval := time.Duration(max(spec.IntervalSeconds, 1)) * time.Second
	return now.Sub(spec.HeartbeatTime.Time) <= staleIntervals*interval
}

// staleAt is when a report stops counting.
func staleAt(spec *guardrailsv1alpha1.DeciderReportSpec) time.Time {
	interval := time.Duration(max(spec.IntervalSeconds, 1)) * time.Second
	return spec.HeartbeatTime.Add(staleIntervals * interval)
}

// put records the latest report of name and folds its passports' denies into their logs (once per
// heartbeat). It returns the previous report (nil when none).
func (v *reportView) put(name string, spec *guardrailsv1alpha1.DeciderReportSpec) *guardrailsv1alpha1.DeciderReportSpec {
	v.mu.Lock()
	defer v.mu.Unlock()
	prev := v.reports[name]
	v.reports[name] = spec
	hb := spec.HeartbeatTime.Time
	if last, ok := v.folded[name]; ok && !hb.After(last) {
		return prev
	}
	v.folded[name] = hb
	for i := range spec.Namespaces {
		ns := &spec.Namespaces[i]
		for _, p := range ns.Passports {
			n := p.Denies - p.SuspendedDenies
			if n <= 0 {
				continue
			}
			key := types.NamespacedName{Namespace: ns.Namespace, Name: p.Name}
			l := v.denials[key]
			if l == nil {
				l = &denialLog{}
				v.denials[key] = l
			}
			l.samples = append(l.samples, denialSample{at: hb, n: n, code: p.LastDenyCode})
			if len(l.samples) > 4096 {
				l.samples = l.samples[len(l.samples)-4096:]
			}
		}
	}
	return prev
}

// remove forgets the report of name and returns it (nil when unknown).
func (v *reportView) remove(name string) *guardrailsv1alpha1.DeciderReportSpec {
	v.mu.Lock()
	defer v.mu.Unlock()
	prev := v.reports[name]
	delete(v.reports, name)
	delete(v.folded, name)
	return prev
}

// policyReports is what the live reports say about one policy.
type policyReports struct {
	// replicas and enforcing count the live replicas and those enforcing the current generation.
	replicas, enforcing int32
	// errors is the evaluation errors of the replicas' last windows; rule and message the latest.
	errors        int64
	rule, message string
}

// policy folds the live reports for policy name of ns at generation gen (UID uid); enforces says
// whether a bundle revision of ns holds that generation.
func (v *reportView) policy(ns, name string, now time.Time, enforces func(rev string) bool) policyReports {
	v.mu.RLock()
	defer v.mu.RUnlock()
	var out policyReports
	var latest time.Time
	for _, spec := range v.reports {
		if !live(spec, now) {
			continue
		}
		out.replicas++
		for i := range spec.Namespaces {
			nr := &spec.Namespaces[i]
			if nr.Namespace != ns {
				continue
			}
			if enforces(nr.Revision) {
				out.enforcing++
			}
			for _, p := range nr.Policies {
				if p.Name != name || p.EvaluationErrors == 0 {
					continue
				}
				out.errors += p.EvaluationErrors
				if p.LastError != nil && !spec.HeartbeatTime.Time.Before(latest) {
					latest = spec.HeartbeatTime.Time
					out.rule, out.message = p.LastError.Rule, p.LastError.Message
				}
			}
		}
	}
	return out
}

// passportReports is what the live reports say about one passport.
type passportReports struct {
	// reporting is true when some replica reports.
	reporting bool
	// recent is the denies of the replicas' last windows; code the latest deny's code.
	recent int64
	code   string
	// window is the denies (oap.passport_suspended ones aside) reported within the autoSuspend window
	// since the last suspension or lift, and windowCode the latest of their codes.
	window     int64
	windowCode string
}

// passport folds the live reports for passport name of ns, counting autoSuspend denials within.
func (v *reportView) passport(key types.NamespacedName, now time.Time, within time.Duration) passportReports {
	v.mu.RLock()
	defer v.mu.RUnlock()
	var out passportReports
	var latest time.Time
	for _, spec := range v.reports {
		if !live(spec, now) {
			continue
		}
		out.reporting = true
		for i := range spec.Namespaces {
			nr := &spec.Namespaces[i]
			if nr.Namespace != key.Namespace {
				continue
			}
			for _, p := range nr.Passports {
				if p.Name != key.Name {
					continue
				}
				out.recent += p.Denies
				if p.LastDenyCode != "" && !spec.HeartbeatTime.Time.Before(latest) {
					latest, out.code = spec.HeartbeatTime.Time, p.LastDenyCode
				}
			}
		}
	}
	if l := v.denials[key]; l != nil && within > 0 {
		from := now.Add(-within)
		for _, s := range l.samples {
			if s.at.After(from) && s.at.After(l.since) {
				out.window += s.n
				out.windowCode = s.code
			}
		}
	}
	return out
}

// resetDenials forgets the denies of key reported up to now (after a suspension or a lift).
func (v *reportView) resetDenials(key types.NamespacedName, now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	l := v.denials[key]
	if l == nil {
		l = &denialLog{}
		v.denials[key] = l
	}
	l.since = now
	l.samples = nil
}

// forgetPassport drops the denial log of a deleted passport.
func (v *reportView) forgetPassport(key types.NamespacedName) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.denials, key)
}

// revisionGenerations is what one stored bundle revision held: the generation (and UID) of each policy.
type revisionGenerations struct {
	revision string
	policies map[string]enforcedPolicy
}

// remember records the policies of a stored revision of ns (called by bundleState.put).
func (h *revisionHistory) remember(ns string, rec *namespaceRecord) {
	if rec.revision == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	list := h.byNS[ns]
	for _, r := range list {
		if r.revision == rec.revision {
			return
		}
	}
	list = append(list, revisionGenerations{revision: rec.revision, policies: rec.policies})
	if len(list) > maxRevisionHistory {
		list = list[len(list)-maxRevisionHistory:]
	}
	h.byNS[ns] = list
}

// holds reports whether revision rev of ns held policy name at generation gen with UID uid.
func (h *revisionHistory) holds(ns, rev, name string, uid types.UID, gen int64) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, r := range h.byNS[ns] {
		if r.revision != rev {
			continue
		}
		p, ok := r.policies[name]
		return ok && p.spec.Generation == gen && (p.uid == "" || p.uid == uid)
	}
	return false
}

// revisionHistory remembers the policies of recent bundle revisions of each namespace.
type revisionHistory struct {
	mu   sync.RWMutex
	byNS map[string][]revisionGenerations
}

func newRevisionHistory() *revisionHistory {
	return &revisionHistory{byNS: map[string][]revisionGenerations{}}
}
