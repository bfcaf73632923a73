package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/gin-gonic/gin/render"
	"github.com/go-playground/validator/v10"
)

// bindJSON decodes the body into dst strictly (unknown keys and trailing
// data are errors) and checks its binding tags and cross-field rules.
func (s *Server) bindJSON(c *gin.Context, dst any) error {
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	if err := decodeStrict(body, dst); err != nil {
		return err
	}
	return s.check(dst)
}

// decodeStrict decodes one JSON value into dst: unknown keys, a key given
// twice in one object, and data after the value are errors.
func decodeStrict(body []byte, dst any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return fmt.Errorf("%w: the request body is empty (want a JSON object)", ErrMalformed)
	}
	if err := duplicateKeys(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: unexpected data after the JSON value", ErrMalformed)
	}
	return nil
}

// duplicateKeys refuses a JSON value with a key given twice in one object
// (encoding/json would keep the last silently), naming its path. Syntax
// errors are left to the decoder.
func duplicateKeys(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	type frame struct {
		object bool
		keys   map[string]bool
		path   string
		index  int
		key    string // the key whose value comes next (objects)
		atKey  bool   // the next token is a key
	}
	var stack []*frame
	child := func() string { // the path of the value about to start
		if len(stack) == 0 {
			return ""
		}
		f := stack[len(stack)-1]
		if f.object {
			return joinPath(f.path, f.key)
		}
		return fmt.Sprintf("%s[%d]", f.path, f.index)
	}
	done := func() { // a value ended
		if len(stack) == 0 {
			return
		}
		f := stack[len(stack)-1]
		if f.object {
			f.atKey = true
		} else {
			f.index++
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or a syntax error the decoder words
		}
		if len(stack) > 0 {
			if f := stack[len(stack)-1]; f.object && f.atKey {
				if k, ok := tok.(string); ok {
					if f.keys[k] {
						return &ValidationError{Fields: []FieldProblem{{Field: joinPath(f.path, k), Reason: "is given twice"}}}
					}
					f.keys[k], f.key, f.atKey = true, k, false
					continue
				}
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, keys: map[string]bool{}, path: child(), atKey: true})
		case json.Delim('['):
			stack = append(stack, &frame{path: child()})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			done()
		default:
			done()
		}
	}
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// jsonError turns encoding/json's errors into malformed-request and
// validation errors naming the field.
func jsonError(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("%w: invalid JSON at byte %d: %v", ErrMalformed, se.Offset, se)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: the JSON value is cut short", ErrMalformed)
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			return fmt.Errorf("%w: want a JSON %s, not %s", ErrMalformed, jsonTypeName(te.Type), te.Value)
		}
		return &ValidationError{Fields: []FieldProblem{{Field: field, Reason: fmt.Sprintf("must be %s, not %s", jsonTypeName(te.Type), te.Value)}}}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return &ValidationError{Fields: []FieldProblem{{Field: name, Reason: "unknown key"}}}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrMalformed, err)
}

func jsonTypeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Pointer:
		return jsonTypeName(t.Elem())
	}
	return "an object"
}

// check validates v's binding tags and registered struct rules.
func (s *Server) check(v any) error {
	err := s.validate.Struct(v)
	if err == nil {
		return nil
	}
	var ves validator.ValidationErrors
	if !errors.As(err, &ves) {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	out := &ValidationError{}
	for _, fe := range ves {
		out.Fields = append(out.Fields, FieldProblem{Field: fieldPath(fe.Namespace()), Reason: reason(fe)})
	}
	return out
}

// fieldPath drops the struct name from a validator namespace
// ("CapacityRequest.engine.max_num_seqs" → "engine.max_num_seqs").
func fieldPath(ns string) string {
	if _, rest, ok := strings.Cut(ns, "."); ok {
		return rest
	}
	return ns
}

// reason words a failed rule.
func reason(fe validator.FieldError) string {
	p := fe.Param()
	isString := fe.Kind() == reflect.String
	switch fe.Tag() {
	case "required":
		return "is required"
	case "min", "gte":
		if isString {
			return "must be at least " + p + " characters long"
		}
		return "must be >= " + p
	case "max", "lte":
		if isString {
			return "must be at most " + p + " characters long"
		}
		return "must be <= " + p
	case "gt":
		return "must be > " + p
	case "lt":
		return "must be < " + p
	case "oneof":
		return "must be one of: " + strings.ReplaceAll(p, " ", ", ")
	case "catalog_id":
		return "must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit"
	case tagTPDividesHeads:
		return "must divide the model's attention heads and KV heads evenly (" + p + ")"
	case tagWithinMaxModelLen:
		return "prompt_tokens + output_tokens must not exceed max_model_len (" + p + ")"
	case tagBatchedTokensGESeqs:
		return "must be >= max_num_seqs (" + p + ")"
	}
	return fmt.Sprintf("fails the %q rule", fe.Tag())
}

// jsonName names struct fields by their json tag in validation errors.
func jsonName(f reflect.StructField) string {
	for _, tag := range []string{"json", "form"} {
		name, _, _ := strings.Cut(f.Tag.Get(tag), ",")
		if name == "-" {
			return ""
		}
		if name != "" {
			return name
		}
	}
	return f.Name
}

// problemJSON renders a Problem with its media type.
type problemJSON struct{ p Problem }

func (r problemJSON) Render(w http.ResponseWriter) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(r.p)
}

func (r problemJSON) WriteContentType(w http.ResponseWriter) {
	w.Header().Set("Content-Type", ProblemContentType)
}

var _ render.Render = problemJSON{}

// marshalJSON encodes v as the CLI's --output json does: two-space
// indents and a final newline.
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// respond writes v as JSON with status; a value that cannot be encoded
// becomes a 500 problem.
func (s *Server) respond(c *gin.Context, status int, v any) {
	b, err := marshalJSON(v)
	if err != nil {
		s.fail(c, fmt.Errorf("encode response: %w", err))
		return
	}
	c.Data(status, "application/json; charset=utf-8", b)
}
