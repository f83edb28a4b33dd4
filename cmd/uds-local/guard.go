package main

import (
	"net"
	"net/http"
	"slices"

	"github.com/udsproject/uds/internal/sameorigin"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/httpapi"
)

// guard serves next only what the server's own pages, programs on this
// machine, and the pages of UDS_ALLOWED_ORIGINS send (sameorigin), to a
// Host that names the server: the address it listens on (addr, the port
// actually bound), the host of UDS_LISTEN_ADDR, localhost or a loopback
// address. The allowed origins get the CORS answers the deployment's API
// gives its origins (sameorigin.API), and may name the caller in
// X-Uds-Subject as the console does.
func guard(addr net.Addr, cfg config.Config, next http.Handler) http.Handler {
	name, _, _ := net.SplitHostPort(cfg.ListenAddr)
	return sameorigin.New(addr.String(), name, cfg.AllowedOrigins).Handler("the local server", localCORS, next)
}

// localCORS is the API's CORS (sameorigin.API), and X-Uds-Subject,
// which the local server may trust.
var localCORS = sameorigin.CORS{
	Methods: sameorigin.API.Methods,
	Headers: append(slices.Clone(sameorigin.API.Headers), httpapi.SubjectHeader),
	Expose:  sameorigin.API.Expose,
}
