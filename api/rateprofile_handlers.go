package api

import (
	"bytes"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/headroom-sim/headroom/internal/study/plan"
	"github.com/headroom-sim/headroom/sim/workload"
)

// POST /v1/rate-profile: the rate profile of `headroom plan --rate-profile`
// or `--rate-profile-trace`, made from an uploaded file, for a scenario's
// workload (scenarios over the API name no files).

// RateProfileResult is the answer of POST /v1/rate-profile: the
// workload.rate_profile (and rate_profile_end_s) a scenario takes inline
// and, for a trace, its lengths as quantile buckets (workload.input_tokens
// and output_tokens).
type RateProfileResult struct {
	// RateProfile holds each rate (req/s) from its at_s to the next point's.
	RateProfile []workload.RatePoint `json:"rate_profile"`
	// RateProfileEndS is when the last rate ends (0: as long as the step
	// before it).
	RateProfileEndS float64 `json:"rate_profile_end_s"`
	// Requests is the trace's request count (kind trace).
	Requests int `json:"requests,omitempty" example:"3000"`
	// TraceWindowS is the window of trace each point counts arrivals in
	// (window_s / time_scale; kind trace).
	TraceWindowS float64 `json:"trace_window_s,omitempty" example:"9"`
	// InputTokens and OutputTokens follow the trace's lengths: 32
	// equal-weight buckets between its quantiles (kind trace).
	InputTokens  *workload.LengthSpec `json:"input_tokens,omitempty"`
	OutputTokens *workload.LengthSpec `json:"output_tokens,omitempty"`
	// Notes say what was done to the file (stretched, scaled, counted).
	Notes []string `json:"notes,omitempty"`
}

// rateProfileFields are the form fields of POST /v1/rate-profile besides
// file.
var rateProfileFields = []string{"kind", "trace_format", "window_s", "time_scale", "rate_scale"}

// rateProfile godoc
//
//	@Summary		Make a rate profile from a file
//	@Description	The traffic of `headroom plan --rate-profile FILE` or `--rate-profile-trace TRACE`, for a scenario's workload (scenarios over the API reference no files). The body is multipart/form-data: `file`, and `kind` profile (the default: a CSV with an at_s,rate_rps header, or a YAML/JSON list of {at_s, rate_rps}, at least two points) or trace (a request trace, `trace_format` azure, mooncake, burstgpt, csv, jsonl or llmservingsim; default azure for .csv, mooncake for .jsonl, whose arrivals are counted per window of `window_s` / `time_scale` seconds of trace, 900 by default, and whose lengths become 32 quantile buckets). `time_scale` stretches time keeping the rates (200 makes 7 minutes of trace a day); `rate_scale` multiplies the rates. The body may be up to `calibrations.upload_limit_bytes`.
//	@Tags			plan
//	@Accept			multipart/form-data
//	@Produce		json,application/problem+json
//	@Param			file			formData	file	true	"rate profile or request trace"
//	@Param			kind			formData	string	false	"profile (default) or trace"	Enums(profile, trace)
//	@Param			trace_format	formData	string	false	"format of a trace (default: azure for .csv, mooncake for .jsonl)"
//	@Param			window_s		formData	number	false	"window of the profile a trace's arrivals are counted in, s (default 900)"
//	@Param			time_scale		formData	number	false	"stretch time by this factor, keeping the rates (default 1)"
//	@Param			rate_scale		formData	number	false	"multiply the rates by this factor (default 1)"
//	@Success		200				{object}	RateProfileResult
//	@Failure		400				{object}	Problem	"malformed form, invalid field, or a file that does not read as a profile or a trace"
//	@Failure		413				{object}	Problem	"body too large"
//	@Failure		415				{object}	Problem	"not multipart/form-data"
//	@Security		BearerToken
//	@Router			/v1/rate-profile [post]
func (s *Server) rateProfile(c *gin.Context) {
	f, hold, err := s.readUploadForm(c, rateProfileFields)
	if err != nil {
		s.fail(c, err)
		return
	}
	defer hold.release()
	res, err := makeRateProfile(f)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.respond(c, http.StatusOK, res)
}

// number reads an optional number field within [lo, hi].
func number(f *runForm, name string, def, lo, hi float64) (float64, error) {
	v := f.fields[name]
	if v == "" {
		return def, nil
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || !(x >= lo && x <= hi) {
		return 0, invalid(name, "must be a number in [%g, %g], not %q", lo, hi, v)
	}
	return x, nil
}

func makeRateProfile(f *runForm) (*RateProfileResult, error) {
	if len(f.files) != 1 {
		return nil, invalid("file", "give one file, not %d", len(f.files))
	}
	file := f.files[0]
	name := path.Base(file.Name)
	timeScale, err := number(f, "time_scale", 1, 1e-6, 1e6)
	if err != nil {
		return nil, err
	}
	rateScale, err := number(f, "rate_scale", 1, 1e-6, 1e6)
	if err != nil {
		return nil, err
	}
	windowS, err := number(f, "window_s", 900, 1, 86400)
	if err != nil {
		return nil, err
	}
	res := &RateProfileResult{}
	switch kind := f.fields["kind"]; kind {
	case "", "profile":
		if f.fields["trace_format"] != "" || f.fields["window_s"] != "" {
			return nil, invalid("kind", "trace_format and window_s are a trace's: give kind trace")
		}
		pts, err := plan.ParseRateProfile(bytes.NewReader(file.Data), name)
		if err != nil {
			return nil, invalid("file", "%v", err)
		}
		for i := range pts {
			pts[i].AtS *= timeScale
		}
		res.RateProfile = pts
	case "trace":
		format := f.fields["trace_format"]
		switch {
		case format != "" && !slices.Contains(workload.TraceFormats(), format):
			return nil, invalid("trace_format", "%q is not a trace format (%s)", format, strings.Join(workload.TraceFormats(), ", "))
		case format == "" && strings.HasSuffix(name, ".csv"):
			format = workload.FormatAzure
		case format == "" && strings.HasSuffix(name, ".jsonl"):
			format = workload.FormatMooncake
		case format == "":
			return nil, invalid("trace_format", "say the format of %s (%s)", name, strings.Join(workload.TraceFormats(), ", "))
		}
		recs, err := workload.ParseTrace(bytes.NewReader(file.Data), format, name)
		if err != nil {
			return nil, invalid("file", "%v", err)
		}
		tp, err := plan.ProfileFromTrace(recs, windowS, timeScale)
		if err != nil {
			return nil, invalid("file", "%s: %v", name, err)
		}
		res.RateProfile, res.RateProfileEndS, res.TraceWindowS, res.Requests = tp.Points, tp.EndS, tp.TraceWindowS, len(recs)
		res.InputTokens, res.OutputTokens = &tp.InputTokens, &tp.OutputTokens
		res.Notes = append(res.Notes, fmt.Sprintf("the rate profile counts %s's %d arrivals in windows of %.4g s of trace, stretched %g× into %g s windows",
			name, len(recs), tp.TraceWindowS, timeScale, windowS),
			"input_tokens and output_tokens follow the trace's lengths (32 quantile buckets each, drawn independently)")
	default:
		return nil, invalid("kind", "%q is not profile or trace", kind)
	}
	for i := range res.RateProfile {
		res.RateProfile[i].RateRPS *= rateScale
	}
	if rateScale != 1 {
		res.Notes = append(res.Notes, fmt.Sprintf("the rates are scaled %g×", rateScale))
	}
	if timeScale != 1 && f.fields["kind"] != "trace" {
		res.Notes = append(res.Notes, fmt.Sprintf("time is stretched %g×", timeScale))
	}
	return res, nil
}
