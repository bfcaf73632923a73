package api

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/headroom-sim/headroom/catalogs"
)

// listGPUs godoc
//
//	@Summary		List the GPU catalog
//	@Description	Every GPU: memory the driver reports, HBM bandwidth, dense and sparse TFLOPS, links, price (as `headroom catalog list gpus --output json`).
//	@Tags			catalog
//	@Produce		json,application/problem+json
//	@Success		200	{array}	hardware.GPU
//	@Security		BearerToken
//	@Router			/v1/gpus [get]
func (s *Server) listGPUs(c *gin.Context) {
	s.respond(c, http.StatusOK, nonNil(s.engine.GPUs()))
}

// getGPU godoc
//
//	@Summary		Show one GPU
//	@Description	A GPU by id or alias, case insensitively.
//	@Tags			catalog
//	@Produce		json,application/problem+json
//	@Param			id	path		string	true	"GPU id or alias"	example(h100-sxm)
//	@Success		200	{object}	hardware.GPU
//	@Failure		404	{object}	Problem	"unknown GPU"
//	@Security		BearerToken
//	@Router			/v1/gpus/{id} [get]
func (s *Server) getGPU(c *gin.Context) {
	id, err := pathID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	g, err := s.engine.GPU(id)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.respond(c, http.StatusOK, g)
}

// listModels godoc
//
//	@Summary		List the model catalog
//	@Description	Every model, built-in, from the catalog directory, from the model store or added with POST /v1/models (as `headroom catalog list models --output json`).
//	@Tags			catalog
//	@Produce		json,application/problem+json
//	@Success		200	{array}	models.Model
//	@Security		BearerToken
//	@Router			/v1/models [get]
func (s *Server) listModels(c *gin.Context) {
	s.respond(c, http.StatusOK, nonNil(s.engine.Models()))
}

// getModel godoc
//
//	@Summary		Show one model
//	@Description	A model by id, alias or Hugging Face id (which contains a slash: send it as is or escaped), with its parameter counts (as `headroom catalog show models ID --output json`).
//	@Tags			catalog
//	@Produce		json,application/problem+json
//	@Param			id	path		string	true	"model id, alias or Hugging Face id"	example(llama-3.1-8b)
//	@Success		200	{object}	ModelDetail
//	@Failure		404	{object}	Problem	"unknown model"
//	@Security		BearerToken
//	@Router			/v1/models/{id} [get]
func (s *Server) getModel(c *gin.Context) {
	id, err := pathID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	m, err := s.engine.Model(id)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.respond(c, http.StatusOK, ModelDetail{Model: m, Params: m.Params()})
}

// addModel godoc
//
//	@Summary		Add a model from a Hugging Face config.json
//	@Description	The body is a model's config.json. The model is kept for the life of the process, or written to the model store (`<model_store_dir>/models/<id>.yaml`) when one is configured. Unknown config.json keys are errors unless ignore_unknown is true. An id or hf_id that already names a model is a conflict. The server holds at most `models.max_added` added models (422 beyond: DELETE one first).
//	@Tags			catalog
//	@Accept			json
//	@Produce		json,application/problem+json
//	@Param			id				query		string	true	"id of the new model"	example(my-llama)
//	@Param			hf_id			query		string	false	"Hugging Face id (an alias)"
//	@Param			ignore_unknown	query		bool	false	"ignore config.json keys Headroom does not know"
//	@Param			config			body		object	true	"Hugging Face config.json"
//	@Success		201				{object}	ImportedModel
//	@Header			201				{string}	Location	"/v1/models/{id}"
//	@Failure		400				{object}	Problem	"invalid id or config.json"
//	@Failure		409				{object}	Problem	"the id is taken"
//	@Failure		413				{object}	Problem	"body too large"
//	@Failure		422				{object}	Problem	"models.max_added models are held already"
//	@Security		BearerToken
//	@Router			/v1/models [post]
func (s *Server) addModel(c *gin.Context) {
	q := ImportModelQuery{ID: c.Query("id"), HFID: c.Query("hf_id")}
	switch v := c.Query("ignore_unknown"); v {
	case "", "false", "0":
	case "true", "1":
		q.IgnoreUnknown = true
	default:
		s.fail(c, &ValidationError{Fields: []FieldProblem{{Field: "ignore_unknown", Reason: "must be true or false"}}})
		return
	}
	if err := s.check(q); err != nil {
		s.fail(c, err)
		return
	}
	body, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	if err := decodeStrict(body, new(map[string]any)); err != nil {
		s.fail(c, err)
		return
	}
	im, err := s.engine.ImportModel(q, strings.NewReader(string(body)), s.cfg.Models.MaxAdded)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Header("Location", "/v1/models/"+url.PathEscape(im.Model.ID))
	s.respond(c, http.StatusCreated, im)
}

// deleteModel godoc
//
//	@Summary		Delete an added model
//	@Description	Removes a model added with POST /v1/models (by id, alias or Hugging Face id), and its file from the model store. Models of the catalog the server started with (built in, or from catalog_dir) cannot be deleted (409). Jobs already queued that name it fail when they run.
//	@Tags			catalog
//	@Produce		application/problem+json
//	@Param			id	path	string	true	"model id, alias or Hugging Face id"	example(my-llama)
//	@Success		204
//	@Failure		404	{object}	Problem	"unknown model"
//	@Failure		409	{object}	Problem	"a model of the server's catalog"
//	@Security		BearerToken
//	@Router			/v1/models/{id} [delete]
func (s *Server) deleteModel(c *gin.Context) {
	id, err := pathID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	if _, err := s.engine.DeleteModel(id); err != nil {
		s.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// pathID is the id a path names (a model's may be a Hugging Face id with
// a slash, sent as is or escaped), refused past catalogs.MaxNameBytes
// before any lookup: no id is longer, and matching a long one against
// every name ("did you mean") would cost the product of the lengths.
func pathID(c *gin.Context) (string, error) {
	id := strings.TrimPrefix(c.Param("id"), "/")
	if u, err := url.PathUnescape(id); err == nil {
		id = u
	}
	if len(id) > catalogs.MaxNameBytes {
		return "", invalid("id", "is %d bytes long, more than the %d of any id", len(id), catalogs.MaxNameBytes)
	}
	return id, nil
}

// nonNil makes an empty list encode as [].
func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}
