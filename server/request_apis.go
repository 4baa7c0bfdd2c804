package server

// The request types of the Responses and Messages APIs as model routes
// (request.go): the model each names.

func (r *responsesRequest) modelName() string { return r.Model }
func (r *anthropicRequest) modelName() string { return r.Model }
