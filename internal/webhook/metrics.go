package webhook

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Admission results, the result label of tollgate_webhook_admissions_total.
const (
	// ResultAllowed is an admitted request (patched or not).
	ResultAllowed = "allowed"
	// ResultDenied is a request refused for what it holds (an invalid policy, a pod that may not
	// present its passport): the webhook worked.
	ResultDenied = "denied"
	// ResultError is a request the webhook could not judge (a 5xx answer or a panic): with
	// failurePolicy Fail the object is refused, with Ignore it is admitted unchecked.
	ResultError = "error"
)

// admissions counts the admission webhooks' answers. controller-runtime's
// controller_runtime_webhook_requests_total counts HTTP status codes, which are 200 even when the
// admission response carries an error; this counter tells the webhook's own failures apart.
var admissions = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "tollgate_webhook_admissions_total",
	Help: "Admission requests answered by Tollgate's webhooks, by webhook path and result (allowed, denied, error).",
}, []string{"webhook", "result"})

func init() {
	metrics.Registry.MustRegister(admissions)
}

// InstrumentServer wraps a webhook server so that every admission webhook registered on it counts
// its answers in tollgate_webhook_admissions_total (webhook label: the registered path, a closed
// set). Set it as the manager's WebhookServer.
func InstrumentServer(s webhook.Server) webhook.Server {
	return instrumentedServer{Server: s}
}

type instrumentedServer struct {
	webhook.Server
}

// Register implements webhook.Server: an admission webhook's handler is wrapped before it is
// registered; any other handler is registered as it is.
func (s instrumentedServer) Register(path string, hook http.Handler) {
	if wh, ok := hook.(*admission.Webhook); ok && wh.Handler != nil {
		wh.Handler = countingHandler{next: wh.Handler, path: path}
		for _, r := range []string{ResultAllowed, ResultDenied, ResultError} {
			admissions.WithLabelValues(path, r) // report zeros from the start, so rate() sees the first error
		}
	}
	s.Server.Register(path, hook)
}

// countingHandler counts the answers of the admission handler it wraps.
type countingHandler struct {
	next admission.Handler
	path string
}

// Handle implements admission.Handler. A panic in the wrapped handler counts as an error and goes
// on to controller-runtime's recovery.
func (h countingHandler) Handle(ctx context.Context, req admission.Request) admission.Response {
	result := ResultError
	defer func() { admissions.WithLabelValues(h.path, result).Inc() }()
	resp := h.next.Handle(ctx, req)
	result = admissionResult(resp)
	return resp
}

// admissionResult classifies an admission response.
func admissionResult(resp admission.Response) string {
	switch {
	case resp.Allowed:
		return ResultAllowed
	case resp.Result != nil && resp.Result.Code >= http.StatusInternalServerError:
		return ResultError
	default:
		return ResultDenied
	}
}
