// Package server serves things.
package server

import (
	"fmt"
	"net/http"
)

const DefaultPort = 8181

// Server holds the configuration.
type Server struct {
	Port int
}

// Handler answers requests.
type Handler interface {
	Serve(w http.ResponseWriter, r *http.Request)
}

// Start runs the server.
func (s *Server) Start() error {
	return http.ListenAndServe(fmt.Sprintf(":%d", s.Port), nil)
}

// NewServer builds a server.
func NewServer(port int) *Server {
	return &Server{Port: port}
}

func größe(s string) int { return len(s) }
