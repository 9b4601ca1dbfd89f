package userdata

import (
	"fmt"
	"strings"
)

// windows renders the PowerShell that runs the EKS Windows bootstrap
// script, after the user's own PowerShell.
func windows(opts Options) string {
	k := opts.kubelet()
	var b strings.Builder
	b.WriteString("<powershell>\n")
	if opts.UserData != nil && strings.TrimSpace(*opts.UserData) != "" {
		b.WriteString(strings.TrimRight(*opts.UserData, "\n") + "\n")
	}
	b.WriteString(`[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\Amazon\EKS\Start-EKSBootstrap.ps1"` + "\n")
	fmt.Fprintf(&b, "& $EKSBootstrapScriptFile -EKSClusterName '%s' -APIServerEndpoint '%s'", opts.ClusterName, opts.ClusterEndpoint)
	if opts.CABundle != "" {
		fmt.Fprintf(&b, " -Base64ClusterCA '%s'", opts.CABundle)
	}
	if args := opts.kubeletExtraArgs(k); args != "" {
		fmt.Fprintf(&b, " -KubeletExtraArgs '%s'", args)
	}
	if len(k.ClusterDNS) != 0 {
		fmt.Fprintf(&b, " -DNSClusterIP '%s'", k.ClusterDNS[0])
	}
	b.WriteString("\n</powershell>")
	return b.String()
}
