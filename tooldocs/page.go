package tooldocs

import (
	"bytes"
	"embed"
	"encoding/json"
	"html/template"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/toolgate/toolgate/internal/httpx"
	"github.com/toolgate/toolgate/internal/pagestyle"
	"github.com/toolgate/toolgate/toolgatetype"
)

//go:embed templates/tool.html
var templateFS embed.FS

// toolPageTemplate is parsed once. html/template escapes every value for
// the context it lands in; no provider text is ever passed as template.HTML.
var toolPageTemplate = template.Must(template.ParseFS(templateFS, "templates/tool.html"))

// pageCSP allows exactly the page's inline stylesheet, by its hash, and
// nothing else: no scripts, images, frames or forms.
var pageCSP = "default-src 'none'; style-src " + pagestyle.Source(pagestyle.CSS) +
	"; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// pageData is what the page template shows.
type pageData struct {
	Style template.CSS

	Name, Description, Slug, Category string
	Tags                              []string
	Version                           int
	Digest                            string
	UpdatedAt                         string

	UntrustedOutput, ProviderText string

	PricingType, Price, Fee, Total string

	Callable, AutoCall, MonetizationEligible bool
	Requirement, RequirementMeaning          string
	Reasons                                  []string
	// Rules are the organization's rules that may decide a call of the
	// tool; RulesNotice says what they are.
	Rules       []toolgatetype.ToolRule
	RulesNotice string

	ProviderName, TrustTier          string
	PaymentVerified                  bool
	EndpointStatus, EndpointOrigin   string
	VersionStatus                    string
	BehaviorStatus, BehaviorEvidence string
	RiskLevel, DataRetention         string
	Capabilities                     []capabilityRow
	OutboundDomains                  []string
	InvocationsLabel, UsersLabel     string
	Flow                             []string
	CallExample                      string
	InputSchema, OutputSchema        string
	Links                            pageLinks
}

type capabilityRow struct {
	Name  string
	Value bool
}

type pageLinks struct {
	Docs, OpenAPI, LLMs, Entry, Versions string
}

func (d *toolDoc) page() pageData {
	t, e := d.v.Tool, d.entry
	c := e.Risk.Capabilities
	example, _ := json.MarshalIndent(d.callExample(), "", "  ")
	p := pageData{
		Style:                template.CSS(pagestyle.CSS),
		Name:                 t.Name,
		Description:          t.Description,
		Slug:                 t.Slug,
		Category:             t.Category,
		Tags:                 e.Tags,
		Version:              t.Version,
		Digest:               d.v.Digest,
		UpdatedAt:            t.UpdatedAt.UTC().Format(time.RFC3339),
		UntrustedOutput:      untrustedOutputNotice,
		ProviderText:         providerTextNotice,
		PricingType:          e.Pricing.Type,
		Price:                d.price,
		Fee:                  d.fee,
		Total:                d.total,
		Callable:             e.Policy.Callable,
		AutoCall:             e.Policy.EligibleForAutoCall,
		MonetizationEligible: e.Policy.MonetizationEligible,
		Requirement:          string(d.requirement()),
		RequirementMeaning:   approvalMeaning(d.requirement(), d.v.Digest),
		Reasons:              e.Policy.Reasons,
		Rules:                e.Rules,
		RulesNotice:          rulesNotice,
		ProviderName:         t.Provider.Name,
		TrustTier:            t.Provider.TrustTier,
		PaymentVerified:      t.Provider.PaymentVerified,
		EndpointStatus:       e.Trust.Endpoint.Status,
		EndpointOrigin:       e.Trust.Endpoint.Origin,
		VersionStatus:        e.Trust.Version.Status,
		BehaviorStatus:       e.Trust.Behavior.Status,
		BehaviorEvidence:     e.Trust.Behavior.Evidence,
		RiskLevel:            string(e.Risk.Level),
		DataRetention:        c.DataRetention,
		Capabilities: []capabilityRow{
			{"Declared", c.Declared},
			{"Read-only", c.ReadOnly},
			{"Destructive", c.Destructive},
			{"Idempotent", c.Idempotent},
			{"Open world", c.OpenWorld},
			{"Reads private data", c.ReadsPrivateData},
			{"Sees untrusted content", c.SeesUntrustedContent},
			{"Writes external data", c.WritesExternalData},
			{"Sends messages", c.SendsMessages},
			{"Spends money", c.SpendsMoney},
			{"Executes code", c.ExecutesCode},
			{"Requires user credential", c.RequiresUserCredential},
		},
		OutboundDomains:  c.AllowedOutboundDomains,
		InvocationsLabel: e.Usage.InvocationsLabel,
		UsersLabel:       e.Usage.UsersLabel,
		Flow:             d.flow(),
		CallExample:      string(example),
		InputSchema:      prettyJSON(t.InputSchema),
		Links: pageLinks{
			Docs:     d.docsURL(),
			OpenAPI:  d.openAPIURL(),
			LLMs:     d.llmsURL(),
			Entry:    d.metadataURL(),
			Versions: d.versionsURL(),
		},
	}
	if d.hasOutputSchema() {
		p.OutputSchema = prettyJSON(t.OutputSchema)
	}
	return p
}

// prettyJSON indents a JSON document for reading; it is shown as text, so
// html/template escapes whatever a provider put in it.
func prettyJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

// toolPage answers GET /tools/{tool}: the tool's documentation page.
func (h *Handler) toolPage(w http.ResponseWriter, r *http.Request) {
	d, err := h.loadToolDoc(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var page bytes.Buffer
	if err := toolPageTemplate.Execute(&page, d.page()); err != nil {
		h.writeError(w, r, err)
		return
	}
	// The provider's name, description, tags and schemas reach the reader
	// with every invisible character shown as its escape, as on the
	// approval pages: the template has none of its own, so only provider
	// text changes.
	body := pagestyle.Visible(page.String())
	hdr := w.Header()
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	hdr.Set("Content-Security-Policy", pageCSP)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	httpx.VaryOnForwarded(w)
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, body)
}
