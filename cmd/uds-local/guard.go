package main

import (
	"net"
	"net/http"

	"github.com/udsproject/uds/internal/sameorigin"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/httpapi"
)

// guard serves next only what the server's own pages, programs on this
// machine, and the pages of UDS_ALLOWED_ORIGINS send (sameorigin), to a
// Host that names the server: the address it listens on (addr, the port
// actually bound), the host of UDS_LISTEN_ADDR, localhost or a loopback
// address. The allowed origins get the CORS answers the deployment's API
// gives its origins (infra/api.go, corsOptions), and may name the caller
// in X-Uds-Subject as the console does.
func guard(addr net.Addr, cfg config.Config, next http.Handler) http.Handler {
	name, _, _ := net.SplitHostPort(cfg.ListenAddr)
	return sameorigin.New(addr.String(), name, cfg.AllowedOrigins).Handler("the local server", localCORS, next)
}

// localCORS is the deployment's API's CORS (infra/api.go, corsOptions),
// and X-Uds-Subject, which the local server may trust.
var localCORS = sameorigin.CORS{
	Methods: []string{"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS"},
	Headers: []string{"Authorization", "Content-Type", "If-Match", "If-None-Match",
		"X-Amz-Date", "X-Amz-Security-Token", "X-Amz-Content-Sha256",
		"Uds-Class-Name", "Uds-Ttl", "Uds-Expires-At", "Range", httpapi.SubjectHeader},
	Expose: []string{"ETag", "Location", "Retry-After", "RateLimit", "RateLimit-Policy",
		"Uds-Version", "Uds-Created-Date", "Uds-Created-By-Subject", "Uds-Updated-Date", "Uds-Updated-By-Subject",
		"Uds-Expires-At", "Uds-Class-Name", "Uds-Content-Type", "Uds-Size", "Content-Range", "Accept-Ranges"},
}
