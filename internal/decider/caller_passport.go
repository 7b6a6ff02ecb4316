package decider

import (
	"strconv"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// maxListedPassports bounds the passport names a 400 answer lists.
const maxListedPassports = 5

// passportForCaller resolves a request that names neither a passport nor an agent id (DeerFlow
// sends "passport": null when the provider holds the passport): with an authenticated caller and
// exactly one passport listing its ServiceAccount in spec.subjects.serviceAccounts, req.Passport
// becomes that passport ("namespace/name"). Otherwise the answer is a 400 saying why.
func (s *Service) passportForCaller(req *policy.Request, caller *Caller, fieldPrefix string) *RequestError {
	field := fieldPrefix + "passport"
	if caller == nil {
		return fieldErr(ErrCodeMissingField, field,
			"passport (\"namespace/name\") or agent_id is required: authentication is off, so there is no caller whose passport could be used")
	}
	var found []string
	for _, ns := range s.store.Namespaces() {
		if !caller.AnyNamespace && ns != caller.Namespace {
			continue
		}
		snap, ok := s.store.Snapshot(ns)
		if !ok {
			continue
		}
		for _, name := range snap.PassportsForServiceAccount(caller.ServiceAccount) {
			found = append(found, ns+"/"+name)
		}
	}
	switch len(found) {
	case 1:
		req.Passport = found[0]
		return nil
	case 0:
		return fieldErr(ErrCodeMissingField, field,
			"passport or agent_id is required: no passport lists service account %s in spec.subjects.serviceAccounts", caller)
	}
	listed := found
	if len(listed) > maxListedPassports {
		listed = listed[:maxListedPassports]
	}
	more := ""
	if n := len(found) - len(listed); n > 0 {
		more = " and " + strconv.Itoa(n) + " more"
	}
	return fieldErr(ErrCodeMissingField, field,
		"passport or agent_id is required: %d passports list service account %s (%s%s); name the one to use",
		len(found), caller, strings.Join(listed, ", "), more)
}
