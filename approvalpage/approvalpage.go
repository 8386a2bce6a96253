package approvalpage

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/authlimit"
	"github.com/toolgate/toolgate/internal/httpx"
	"github.com/toolgate/toolgate/internal/pagestyle"
	"github.com/toolgate/toolgate/toolgatetype"
)

//go:embed templates/approval.html templates/spend.html templates/approval.css
var approvalFS embed.FS

// The pages' template, parsed once, and their stylesheet: the pages'
// common one and the approval pages' own rules, which the
// Content-Security-Policy allows by its hash, with no script at all.
var (
	approvalTemplate = template.Must(template.ParseFS(approvalFS, "templates/approval.html", "templates/spend.html"))
	approvalStyle    = pagestyle.CSS + string(must(approvalFS.ReadFile("templates/approval.css")))
	approvalCSP      = "default-src 'none'; style-src " + pagestyle.Source(approvalStyle) +
		"; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)

// approvalPageData is what every approval page template shows.
type approvalPageData struct {
	Style    template.CSS
	Title    string
	SignedIn bool
	Approver string
	CSRF     string
	Error    string
	Notice   string
	ListURL  string

	SignInReason string
	// Provider names the identity provider people may sign in with, when
	// there is one, and ProviderURL starts that sign-in.
	Provider, ProviderURL string
	// Continue is the page to go on to, at once, after signing in through
	// the provider.
	Continue string

	Requests []pendingRow
	NextURL  string
	// Ambiguous lists the calls of the approver's principals whose outcome
	// is unknown, each with a form to resolve it.
	Ambiguous []ambiguousRow

	Request   *requestView
	Decidable bool

	// SpendURL is the Spend page's address, linked from the list.
	SpendURL string
	// Budgets are the budgets the approver oversees, on the Spend page.
	Budgets []budgetView
}

// pendingRow is one line of the list of pending requests; Free is set
// when its call costs nothing.
type pendingRow struct {
	Tool      toolgatetype.ToolRef
	Principal string
	TotalUSD  string
	Free      bool
	Expires   timeView
	URL       string
}

// ambiguousRow is one call whose outcome is unknown, on the list page.
type ambiguousRow struct {
	ID        string
	Tool      toolgatetype.ToolRef
	Principal string
	TotalUSD  string
	Created   timeView
}

// maxAmbiguousShown bounds the unknown outcomes the list page shows; the
// audit listing (status=ambiguous) has them all.
const maxAmbiguousShown = 50

// requestView is one request as its page shows it. State is its status
// as of now (pending, approved, denied, expired or used), which the
// heading, the line above it and the buttons follow. Free is set when the
// call costs nothing: the page says so rather than add up three zeros.
type requestView struct {
	Principal, State, Heading, DecidedBy, Remember string
	ToolName, ToolSlug                             string
	PriceUSD, FeeUSD, TotalUSD                     string
	Free                                           bool
	ProviderName, TrustTier                        string
	PaymentVerified                                bool
	EndpointStatus, EndpointOrigin, VersionStatus  string
	Digest, RiskLevel, Requirement                 string
	Reasons                                        []string
	Changed                                        bool
	HeadingBefore, HeadingName, HeadingAfter       string
	Input                                          []inputPart
	InputSummary                                   inputSummaryView
	InputSHA256                                    string
	Created, Expires, Decided                      timeView
}

// timeView is a time as a person reads it: how long from now, beside the
// UTC time to the second, and in RFC 3339 for the page's <time>.
type timeView struct {
	Rel, UTC, ISO string
}

// headings say what a request's page is about, by its state: a question
// only while there is one to answer.
var headings = map[toolgatetype.ApprovalStatus]string{
	toolgatetype.ApprovalStatusPending:  "Approve a call of %s?",
	toolgatetype.ApprovalStatusApproved: "Approved: a call of %s",
	toolgatetype.ApprovalStatusDenied:   "Denied: a call of %s",
	toolgatetype.ApprovalStatusExpired:  "Expired: a call of %s",
	toolgatetype.ApprovalStatusUsed:     "Used: the approved call of %s ran",
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// pageTime shows a time to a person: UTC, to the second.
func pageTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

// isZero reports whether amount, a decimal in US dollars, is zero. An
// amount that does not read as one is not: the page then shows it as it is.
func isZero(amount string) bool {
	d, err := decimal.NewFromString(amount)
	return err == nil && d.IsZero()
}

// when shows t as of now: relative ("in 4 min", "12 min ago") beside the
// UTC time. Pages are rendered by the server, so this is the time the
// page was made; a reload brings it up to date. The page's "when" template
// puts the relative time first ("expires in 4 min (...)"), its "until"
// template the UTC time, for words a relative time cannot follow ("may
// run until 2030-03-15 12:04:00 UTC (in 4 min)").
func when(t, now time.Time) timeView {
	return timeView{Rel: relative(t.Sub(now)), UTC: pageTime(t), ISO: t.UTC().Format(time.RFC3339)}
}

// relative says a span from now as a person would: "in 4 min",
// "2 h 5 min ago", "in 3 days"; under a minute, "in less than a minute"
// or "just now".
func relative(d time.Duration) string {
	future := d > 0
	if d < 0 {
		d = -d
	}
	if d < time.Minute {
		if future {
			return "in less than a minute"
		}
		return "just now"
	}
	var s string
	switch mins := int(d / time.Minute); {
	case mins < 60:
		s = strconv.Itoa(mins) + " min"
	case mins < 48*60:
		s = strconv.Itoa(mins/60) + " h"
		if mins%60 != 0 {
			s += " " + strconv.Itoa(mins%60) + " min"
		}
	default:
		s = strconv.Itoa(mins/(24*60)) + " days"
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// maxHeadingName bounds the tool's name in a page's heading, so that a
// provider's long name cannot push the decision off the first screen; the
// whole name is beside the buttons.
const maxHeadingName = 40

// approvalListPage answers GET /approvals.
func (h *Handler) approvalListPage(w http.ResponseWriter, r *http.Request) {
	sess, ok := h.pageSession(r)
	if !ok {
		h.renderSignIn(w, r, http.StatusOK, "", "Sign in with your approver key to see the requests waiting for you.")
		return
	}
	h.renderList(w, r, sess, http.StatusOK, "")
}

// approvalPage answers GET /approvals/{id}, and the Spend page and the
// start of a sign-in through the provider beside the requests' (an id is
// a UUID, never "spend" or "sign-in"; one route for all keeps the
// router's answer to other methods whole).
func (h *Handler) approvalPage(w http.ResponseWriter, r *http.Request) {
	switch r.PathValue("id") {
	case spendPageName:
		h.spendPage(w, r)
		return
	case providerSignInName:
		h.startProviderSignIn(w, r)
		return
	}
	sess, ok := h.pageSession(r)
	if !ok {
		h.renderSignIn(w, r, http.StatusOK, "", "An approval request is waiting. Sign in with your approver key to see it.")
		return
	}
	h.renderRequest(w, r, sess, http.StatusOK, "", "")
}

// approvalListForm answers POST /approvals: sign in or out.
func (h *Handler) approvalListForm(w http.ResponseWriter, r *http.Request) {
	h.pageForm(w, r, listForm)
}

// approvalPageForm answers POST /approvals/{id}: sign in or out, or decide;
// on the Spend page, sign in or out only.
func (h *Handler) approvalPageForm(w http.ResponseWriter, r *http.Request) {
	if r.PathValue("id") == spendPageName {
		h.spendPageForm(w, r)
		return
	}
	h.pageForm(w, r, requestForm)
}

// formPage is the page a form was posted to, which decides what it may do
// beside signing in and out.
type formPage int

const (
	listForm    formPage = iota // resolve a call whose outcome is unknown
	requestForm                 // decide the request
	spendForm                   // nothing more
)

// pageForm handles a form posted to an approval page. Every POST must come
// from this very origin; all but sign-in must also carry the session's
// token. A forged POST changes nothing.
func (h *Handler) pageForm(w http.ResponseWriter, r *http.Request, page formPage) {
	onRequest := page == requestForm
	if !sameOrigin(r) {
		h.renderMessage(w, r, http.StatusForbidden, "Refused: this form was not sent from this page.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, h.maxBody)
	if err := r.ParseForm(); err != nil {
		h.renderMessage(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	form := r.PostForm
	switch form.Get("action") {
	case "sign-in":
		h.signIn(w, r, form.Get("key"))
		return
	case "sign-out":
	case "decide", "resolve":
		if page == spendForm {
			h.renderMessage(w, r, http.StatusBadRequest, "The form could not be read.")
			return
		}
	default:
		h.renderMessage(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	sess, ok := h.pageSession(r)
	if !ok {
		h.renderSignIn(w, r, http.StatusUnauthorized, "Your session has ended: sign in again.", "Sign in with your approver key.")
		return
	}
	if !sess.validCSRF(form.Get("csrf")) {
		h.renderMessage(w, r, http.StatusForbidden, "Refused: this form does not belong to your session. Reload the page and try again.")
		return
	}
	if form.Get("action") == "sign-out" {
		if err := h.endSession(r); err != nil {
			h.logError(r, err)
			h.renderMessage(w, r, http.StatusInternalServerError, "The gateway could not sign you out. Try again.")
			return
		}
		http.SetCookie(w, sessionCookieFor(r, "", -1))
		seeOther(w, r)
		return
	}
	if form.Get("action") == "resolve" && !onRequest {
		h.resolve(w, r, sess, form)
		return
	}
	if !onRequest || form.Get("action") != "decide" {
		h.renderMessage(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	d := toolgatetype.Decision{}
	switch form.Get("decision") {
	case "approve":
		d.Approve = true
	case "deny":
	default:
		h.renderRequest(w, r, sess, http.StatusBadRequest, "Choose Approve or Deny.", "")
		return
	}
	// The choices the page offers; "once" (this call only) is also what a
	// form without one means, and the request records it either way.
	switch remember := form.Get("remember"); remember {
	case "", string(toolgatetype.ApprovalOnce):
		d.Remember = toolgatetype.ApprovalOnce
	case string(toolgatetype.ApprovalFirstUse), string(toolgatetype.ApprovalNeverAsk), string(toolgatetype.ApprovalAskChargedCalls):
		d.Remember = toolgatetype.StandingMode(remember)
	default:
		h.renderRequest(w, r, sess, http.StatusBadRequest, "Choose what to remember from the choices given.", "")
		return
	}
	if _, err := h.gw.DecideApproval(r.Context(), sess.Approver, r.PathValue("id"), d); err != nil {
		var te *toolgatetype.Error
		if !errors.As(err, &te) || te.Code == toolgatetype.CodeInternal {
			h.logError(r, err)
			h.renderMessage(w, r, http.StatusInternalServerError, "The gateway could not record your decision. Try again.")
			return
		}
		h.renderRequest(w, r, sess, httpx.StatusOf(te.Code), te.Message, "")
		return
	}
	// Post/redirect/get: a reload shows the decision rather than sending it again.
	seeOther(w, r)
}

// resolve records the signed-in approver's finding about a call whose
// outcome is unknown: it ran (charge it) or it did not (release its amount).
func (h *Handler) resolve(w http.ResponseWriter, r *http.Request, sess Session, form url.Values) {
	in := toolgatetype.ResolveRequest{Note: strings.TrimSpace(form.Get("note"))}
	switch form.Get("outcome") {
	case string(toolgatetype.StatusCompleted):
		in.Outcome = toolgatetype.StatusCompleted
	case string(toolgatetype.StatusFailed):
		in.Outcome = toolgatetype.StatusFailed
	default:
		h.renderList(w, r, sess, http.StatusBadRequest, "Choose whether the call ran or not.")
		return
	}
	res, err := h.gw.ResolveExecution(r.Context(), sess.Approver, form.Get("execution"), in)
	if err != nil {
		var te *toolgatetype.Error
		if !errors.As(err, &te) || te.Code == toolgatetype.CodeInternal {
			h.logError(r, err)
			h.renderMessage(w, r, http.StatusInternalServerError, "The gateway could not record your finding. Try again.")
			return
		}
		h.renderList(w, r, sess, httpx.StatusOf(te.Code), te.Message)
		return
	}
	// The list is shown at once, with what was recorded: sending the form
	// again would only be refused, since a call is resolved once.
	e := res.Execution
	notice := fmt.Sprintf("You resolved the call of %s (execution %s) as %s.", e.Tool.Name, e.ID, resolutionWords[e.Status])
	if in.Note != "" {
		notice += " Your note: " + in.Note
	}
	h.renderListNotice(w, r, sess, notice)
}

// resolutionWords say what a resolution did.
var resolutionWords = map[toolgatetype.Status]string{
	toolgatetype.StatusCompleted: "run: it is charged",
	toolgatetype.StatusFailed:    "not run: its amount is released",
}

// signIn starts a session for an approver key. A caller's key is refused
// with words that say so, so that a person who pasted the wrong key knows
// which one to use; any other key that is not an approver's is refused
// with the same words whatever it is. A client that failed too often is
// refused every key until its window ends.
func (h *Handler) signIn(w http.ResponseWriter, r *http.Request, key string) {
	approver, ok, caller := "", false, false
	if key != "" && len(key) <= apikey.MaxLength {
		approver, ok = h.approvers.AuthenticateApprover(r.Context(), key)
		if !ok && h.callers != nil {
			_, caller = h.callers.Authenticate(r.Context(), key)
		}
	}
	// Asked before the key's own answer is given, so that a refusal tells
	// a guesser nothing of the key. A caller's key is no guess, as an
	// approver key sent to a caller's route of the API is none: the API
	// would take it, so saying so here tells a guesser nothing the API
	// does not.
	v, err := h.limit.Check(r.Context(), r, authlimit.SurfaceApprovalPage, key, ok || caller)
	if err != nil {
		h.logError(r, err)
		h.renderMessage(w, r, http.StatusInternalServerError, "The gateway could not sign you in. Try again.")
		return
	}
	if v.Limited() {
		secs := authlimit.RetryAfterSeconds(v.Wait)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		h.renderSignIn(w, r, http.StatusTooManyRequests, limitedWords(v, secs), "Sign in with your approver key.")
		return
	}
	if caller {
		h.renderSignIn(w, r, http.StatusUnauthorized, callerKeyWords, "Sign in with your approver key.")
		return
	}
	if !ok {
		h.renderSignIn(w, r, http.StatusUnauthorized, "That is not an approver key.", "Sign in with your approver key.")
		return
	}
	token, err := h.startSession(r.Context(), approver)
	if err != nil {
		h.logError(r, err)
		h.renderMessage(w, r, http.StatusInternalServerError, "The gateway could not sign you in. Try again.")
		return
	}
	http.SetCookie(w, sessionCookieFor(r, token, int(sessionTTL/time.Second)))
	seeOther(w, r)
}

// callerKeyWords answer a sign-in with a caller's API key: what it is,
// and which key the pages take instead.
const callerKeyWords = "That is a caller's API key; the approval pages take an approver key: " +
	"sign in with yours, or ask the gateway's operator for one."

// limitedWords tell the person refused by v which limit it was, so that
// they know what waiting is for: their address, which no key gets past
// until its window ends, or the key's first characters, which others have
// tried too often (the right key still signs in from an address that has
// not failed; see authlimit).
func limitedWords(v authlimit.Verdict, secs int) string {
	switch {
	case v.Address && v.KeyPrefix:
		return fmt.Sprintf("Too many failed sign-ins from your address: try again in %d seconds. Keys that begin like this one have also been tried too often.", secs)
	case v.KeyPrefix:
		return fmt.Sprintf("Too many failed sign-ins with keys that begin like this one: try again in %d seconds.", secs)
	default:
		return fmt.Sprintf("Too many failed sign-ins from your address: try again in %d seconds.", secs)
	}
}

// seeOther sends the browser back to the page it posted from.
func seeOther(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Location", httpx.Prefix(r)+r.URL.EscapedPath())
	w.WriteHeader(http.StatusSeeOther)
}

// sameOrigin reports whether a POST was sent from this gateway's own pages:
// its Origin (or, from a browser that sends none, its Referer) is the
// origin the request reached. A POST with neither is refused: every
// browser that could carry a session cookie sends one of them.
func sameOrigin(r *http.Request) bool {
	want := httpx.Scheme(r) + "://" + strings.ToLower(r.Host)
	if origin := r.Header.Get("Origin"); origin != "" {
		return strings.ToLower(origin) == want
	}
	ref, err := url.Parse(r.Header.Get("Referer"))
	if err != nil || ref.Host == "" {
		return false
	}
	return strings.ToLower(ref.Scheme+"://"+ref.Host) == want
}

// renderRequest shows one request to a signed-in approver. A request of
// anyone the approver does not approve for is not found, as it is on the API.
func (h *Handler) renderRequest(w http.ResponseWriter, r *http.Request, sess Session, status int, errMsg, notice string) {
	req, err := h.gw.ApprovalRequestFor(r.Context(), sess.Approver, r.PathValue("id"))
	if err != nil {
		if isNotFound(err) {
			h.render(w, r, http.StatusNotFound, "message", h.pageData(r, &sess, "No such approval request is waiting for you"))
			return
		}
		h.logError(r, err)
		h.renderMessage(w, r, http.StatusInternalServerError, "The gateway could not read this request. Try again.")
		return
	}
	view := h.requestView(r, req)
	data := h.pageData(r, &sess, view.Heading)
	data.Error, data.Notice = errMsg, notice
	data.Request = view
	data.Decidable = req.Status == toolgatetype.ApprovalStatusPending
	h.render(w, r, status, "request", data)
}

// requestView gathers what a person needs to decide: the request, and
// what the registry says of its tool now.
func (h *Handler) requestView(r *http.Request, req *toolgatetype.ApprovalRequest) *requestView {
	now := h.clock.Now()
	heading, ok := headings[req.Status]
	if !ok {
		heading = "A call of %s"
	}
	name := pagestyle.Cut(req.Tool.Name, maxHeadingName)
	before, after, _ := strings.Cut(heading, "%s")
	v := &requestView{
		Principal: req.Principal,
		State:     string(req.Status),
		Heading:   fmt.Sprintf(heading, name),
		// The heading again, its tool's name apart, for the page to
		// isolate: a name cannot reorder the words around it.
		HeadingBefore: before,
		HeadingName:   name,
		HeadingAfter:  after,
		DecidedBy:     req.DecidedBy,
		Remember:      string(req.Remember),
		ToolName:      req.Tool.Name,
		ToolSlug:      req.Tool.Slug,
		PriceUSD:      req.PriceUSD,
		FeeUSD:        req.FeeUSD,
		TotalUSD:      req.TotalUSD,
		Free:          isZero(req.TotalUSD),
		Digest:        req.ManifestDigest,
		Input:         prettyInput(req.Input),
		InputSummary:  inputSummary(req.Input),
		InputSHA256:   req.InputSHA256,
		Created:       when(req.CreatedAt, now),
		Expires:       when(req.ExpiresAt, now),
	}
	if req.DecidedAt != nil {
		v.Decided = when(*req.DecidedAt, now)
	}
	e, err := h.gw.Entry(r.Context(), req.Tool.ID, toolgatetype.EntryOptions{})
	if err != nil {
		v.Changed = true
		return v
	}
	v.ProviderName, v.TrustTier = e.Provider.Name, e.Provider.TrustTier
	v.PaymentVerified = e.Trust.Provider.PaymentVerified
	v.EndpointStatus, v.EndpointOrigin = e.Trust.Endpoint.Status, e.Trust.Endpoint.Origin
	v.VersionStatus = e.Trust.Version.Status
	v.RiskLevel = string(e.Risk.Level)
	v.Requirement = string(e.Policy.Approval.Requirement)
	v.Reasons = e.Policy.Reasons
	v.Changed = e.Version.ManifestDigest == nil || *e.Version.ManifestDigest != req.ManifestDigest
	return v
}

// renderList shows the signed-in approver's pending requests, a page at a
// time (?cursor= continues), and the calls whose outcome is unknown.
func (h *Handler) renderList(w http.ResponseWriter, r *http.Request, sess Session, status int, errMsg string) {
	h.renderListWith(w, r, sess, status, errMsg, "")
}

// renderListNotice is the list with a notice of what was just done.
func (h *Handler) renderListNotice(w http.ResponseWriter, r *http.Request, sess Session, notice string) {
	h.renderListWith(w, r, sess, http.StatusOK, "", notice)
}

func (h *Handler) renderListWith(w http.ResponseWriter, r *http.Request, sess Session, status int, errMsg, notice string) {
	list, err := h.gw.ListApprovalRequests(r.Context(), sess.Approver, toolgatetype.ApprovalListOptions{Cursor: r.URL.Query().Get("cursor")})
	if err != nil {
		var te *toolgatetype.Error
		if errors.As(err, &te) && te.Code == toolgatetype.CodeInvalidRequest {
			h.renderMessage(w, r, http.StatusBadRequest, "That page of requests does not exist.")
			return
		}
		h.logError(r, err)
		h.renderMessage(w, r, http.StatusInternalServerError, "The gateway could not list your requests. Try again.")
		return
	}
	data := h.pageData(r, &sess, "Requests waiting for your approval")
	data.Error, data.Notice = errMsg, notice
	prefix := httpx.Prefix(r)
	now := h.clock.Now()
	for _, req := range list.ApprovalRequests {
		data.Requests = append(data.Requests, pendingRow{
			Tool:      req.Tool,
			Principal: req.Principal,
			TotalUSD:  req.TotalUSD,
			Free:      isZero(req.TotalUSD),
			Expires:   when(req.ExpiresAt, now),
			URL:       prefix + httpx.ApprovalPagePath(req.ID),
		})
	}
	if list.NextCursor != nil {
		data.NextURL = prefix + httpx.ApprovalPagesPath + "?cursor=" + url.QueryEscape(*list.NextCursor)
	}
	unknown, err := h.gw.ListApproverExecutions(r.Context(), sess.Approver, toolgatetype.ExecutionFilter{Status: toolgatetype.StatusAmbiguous, Limit: maxAmbiguousShown})
	if err != nil {
		h.logError(r, err)
		h.renderMessage(w, r, http.StatusInternalServerError, "The gateway could not list your requests. Try again.")
		return
	}
	for _, e := range unknown.Executions {
		data.Ambiguous = append(data.Ambiguous, ambiguousRow{
			ID: e.ID, Tool: e.Tool, Principal: e.Principal, TotalUSD: e.Cost.TotalUSD, Created: when(e.CreatedAt, now),
		})
	}
	h.render(w, r, status, "list", data)
}

// renderSignIn shows only the sign-in form: nothing about any request.
func (h *Handler) renderSignIn(w http.ResponseWriter, r *http.Request, status int, errMsg, reason string) {
	data := h.pageData(r, nil, "Approval requests")
	if h.provider != nil {
		// The provider's button comes first, the key form after it.
		reason = strings.Replace(reason, " with your approver key", "", 1)
	}
	data.Error, data.SignInReason = errMsg, reason
	h.render(w, r, status, "signin", data)
}

// renderMessage shows a sentence, and nothing else.
func (h *Handler) renderMessage(w http.ResponseWriter, r *http.Request, status int, msg string) {
	var sess *Session
	if s, ok := h.pageSession(r); ok {
		sess = &s
	}
	h.render(w, r, status, "message", h.pageData(r, sess, msg))
}

// pageData starts a page's data; sess is nil when no one is signed in.
func (h *Handler) pageData(r *http.Request, sess *Session, title string) approvalPageData {
	d := approvalPageData{Style: template.CSS(approvalStyle), Title: title, ListURL: httpx.Prefix(r) + httpx.ApprovalPagesPath,
		SpendURL: httpx.Prefix(r) + SpendPagePath}
	if sess != nil {
		d.SignedIn, d.Approver, d.CSRF = true, sess.Approver, sess.CSRF
	}
	if h.provider != nil {
		d.Provider, d.ProviderURL = h.provider.cfg.Name, providerSignInURL(r)
	}
	return d
}

// render writes a page. Pages are private to whoever is signed in: never
// cached, never framed, no scripts, and forms post only to this origin.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name string, data approvalPageData) {
	var page bytes.Buffer
	if err := approvalTemplate.ExecuteTemplate(&page, name, data); err != nil {
		h.logError(r, err)
		http.Error(w, "the page could not be shown", http.StatusInternalServerError)
		return
	}
	// Every invisible character reaches the person as its escape, in
	// whatever a caller, a provider or an approver supplied (names,
	// descriptions, messages that quote them, a note): the templates and
	// the stylesheet have none of their own (a test holds them to it), so
	// this changes only what came from outside, and nothing added to a
	// page later can forget it. The escapes are plain ASCII, safe in any
	// place html/template put a value.
	body := pagestyle.Visible(page.String())
	hdr := w.Header()
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	hdr.Set("Content-Security-Policy", approvalCSP)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("X-Frame-Options", "DENY")
	// same-origin, not no-referrer: with no-referrer a browser sends
	// "Origin: null" on a POST, which the origin check must refuse.
	hdr.Set("Referrer-Policy", "same-origin")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// isNotFound reports whether err says the request is not there for this approver.
func isNotFound(err error) bool {
	var te *toolgatetype.Error
	return errors.As(err, &te) && te.Code == toolgatetype.CodeApprovalRequestNotFound
}
