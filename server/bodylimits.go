package server

// MaxUploadBytes is the default and largest body of a knowledge-base
// upload (Limits.UploadBytes).
const MaxUploadBytes = maxKBRequestBytes

// routeMax is the body limit, under l, of a route whose declared limit
// is declared: the default, import and upload limits become
// l.BodyBytes, l.ImportBytes and l.UploadBytes; any other limit a route
// declares is its own.
func (l Limits) routeMax(declared int64) int64 {
	switch declared {
	case DefaultBodyBytes:
		return l.BodyBytes
	case MaxImportBytes:
		return l.ImportBytes
	case MaxUploadBytes:
		return l.UploadBytes
	}
	return declared
}
