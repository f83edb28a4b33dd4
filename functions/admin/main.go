// Command admin is the Lambda function that serves the admin route group.
package main

import (
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/lambdahost"
)

func main() { lambdahost.Main(httpapi.GroupAdmin) }
