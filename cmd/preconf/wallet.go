package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/wallet"
	"github.com/preconf/preconf/web"
)

// walletFlags configure the built-in wallet (EIP-3085/3326).
var walletFlags = []cli.Flag{
	&cli.BoolFlag{Name: "wallet", Value: true, Usage: "serve the built-in wallet methods (false: they answer 4100)", EnvVars: envName("wallet")},
	&cli.StringFlag{Name: "wallet.approval", Value: wallet.ModePrompt, Usage: "who decides wallet requests: prompt (a person decides, on the node's page or with preconf wallet approve|reject ID), auto (approve valid requests), reject (reject all)", EnvVars: envName("wallet.approval")},
	&cli.DurationFlag{Name: "wallet.approval-timeout", Value: wallet.DefaultApprovalTimeout, Usage: "how long a request waits for a person before it is rejected (4001)", EnvVars: envName("wallet.approval-timeout")},
	&cli.BoolFlag{Name: "wallet.allow-private", Usage: "let the eth_chainId probe reach private and link-local addresses, and loopback ones when the node listens on a non-loopback address (a node on loopback only probes loopback URLs without it)", EnvVars: envName("wallet.allow-private")},
	&cli.DurationFlag{Name: "wallet.probe-timeout", Value: wallet.DefaultProbeTimeout, Usage: "time limit of the eth_chainId probe of a submitted RPC URL", EnvVars: envName("wallet.probe-timeout")},
	&cli.StringFlag{Name: "wallet.chain-name", Usage: "this node's chain name in the registry and on the page (default \"preconf chain <id>\")", EnvVars: envName("wallet.chain-name")},
	&cli.StringFlag{Name: "wallet.currency-name", Value: "Ether", Usage: "this node's native currency name", EnvVars: envName("wallet.currency-name")},
	&cli.StringFlag{Name: "wallet.currency-symbol", Value: "ETH", Usage: "this node's native currency symbol (1-6 characters)", EnvVars: envName("wallet.currency-symbol")},
	&cli.StringFlag{Name: "wallet.rpc-url", Usage: "this node's public JSON-RPC URL for its chain data (default: its listening URL)", EnvVars: envName("wallet.rpc-url")},
	&cli.StringSliceFlag{Name: "wallet.explorer-url", Usage: "block explorer URL of this node's chain (repeatable)", EnvVars: envName("wallet.explorer-url")},
}

// applyWalletFlags puts the wallet flags into the node's configuration.
func applyWalletFlags(c *cli.Context, cfg *node.Config) error {
	w := wallet.Config{
		Disabled:        !c.Bool("wallet"),
		Approval:        c.String("wallet.approval"),
		ApprovalTimeout: c.Duration("wallet.approval-timeout"),
		AllowPrivate:    c.Bool("wallet.allow-private"),
		ProbeTimeout:    c.Duration("wallet.probe-timeout"),
	}
	w.Self.ChainName = c.String("wallet.chain-name")
	w.Self.NativeCurrency = wallet.Currency{Name: c.String("wallet.currency-name"), Symbol: c.String("wallet.currency-symbol"), Decimals: 18}
	if u := c.String("wallet.rpc-url"); u != "" {
		w.Self.RPCURLs = []string{u}
	}
	w.Self.BlockExplorerURLs = c.StringSlice("wallet.explorer-url")
	if err := w.Validate(); err != nil {
		return flagError(err, prefixed("wallet."))
	}
	cfg.Wallet = w
	return nil
}

var walletRPCFlag = &cli.StringFlag{Name: "rpc", Value: "http://127.0.0.1:8545", Usage: "URL of the running node (it must be reached over loopback)", EnvVars: envName("wallet.rpc")}

var walletCommand = &cli.Command{
	Name:  "wallet",
	Usage: "list and decide the running node's pending wallet requests",
	Description: "wallet_addEthereumChain requests wait for a person when the node runs with --wallet.approval=prompt.\n" +
		"These commands talk to the node's /wallet/ endpoints, which answer callers on this machine only.",
	Subcommands: []*cli.Command{
		{Name: "pending", Usage: "list the requests waiting for approval", Flags: []cli.Flag{walletRPCFlag}, Action: walletPending},
		{Name: "chains", Usage: "list the wallet's registry", Flags: []cli.Flag{walletRPCFlag}, Action: walletChains},
		{Name: "approve", Usage: "approve a pending request", ArgsUsage: "ID", Flags: []cli.Flag{walletRPCFlag}, Action: walletDecide("approve")},
		{Name: "reject", Usage: "reject a pending request (its caller gets 4001)", ArgsUsage: "ID", Flags: []cli.Flag{walletRPCFlag}, Action: walletDecide("reject")},
	},
}

// walletCall does one request against the node's /wallet/ endpoints.
func walletCall(c *cli.Context, method, path string, out any) error {
	base, err := url.Parse(strings.TrimRight(c.String("rpc"), "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return cli.Exit(fmt.Sprintf("preconf wallet: bad --rpc URL %q", c.String("rpc")), 2)
	}
	ctx, cancel := context.WithTimeout(c.Context, 30*time.Second)
	defer cancel()
	var body io.Reader
	if method == http.MethodPost {
		body = bytes.NewReader([]byte("{}"))
	}
	req, err := http.NewRequestWithContext(ctx, method, base.String()+path, body)
	if err != nil {
		return cli.Exit(fmt.Sprintf("preconf wallet: %v", err), 1)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return cli.Exit(fmt.Sprintf("preconf wallet: %v", err), 1)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return cli.Exit(fmt.Sprintf("preconf wallet: %v", err), 1)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = resp.Status
		}
		return cli.Exit("preconf wallet: "+e.Error, 1)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return cli.Exit(fmt.Sprintf("preconf wallet: bad answer from %s: %v", base, err), 1)
	}
	return nil
}

// trailingRPCFlag returns the positional arguments, taking a --rpc flag
// given after them (`preconf wallet approve ID --rpc URL`; the CLI library
// stops parsing flags at the first argument).
func trailingRPCFlag(c *cli.Context) ([]string, error) {
	var args []string
	in := c.Args().Slice()
	for i := 0; i < len(in); i++ {
		a := in[i]
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "rpc" {
			args = append(args, a)
			continue
		}
		if !hasVal {
			if i+1 >= len(in) {
				return nil, cli.Exit("preconf wallet: --rpc needs a URL", 2)
			}
			i++
			val = in[i]
		}
		if err := c.Set("rpc", val); err != nil {
			return nil, cli.Exit(fmt.Sprintf("preconf wallet: %v", err), 2)
		}
	}
	return args, nil
}

func walletState(c *cli.Context) (*web.State, error) {
	args, err := trailingRPCFlag(c)
	if err != nil {
		return nil, err
	}
	if len(args) > 0 {
		return nil, cli.Exit(fmt.Sprintf("preconf wallet %s: unexpected argument %q", c.Command.Name, args[0]), 2)
	}
	var st web.State
	if err := walletCall(c, http.MethodGet, "/wallet/state", &st); err != nil {
		return nil, err
	}
	return &st, nil
}

func walletPending(c *cli.Context) error {
	st, err := walletState(c)
	if err != nil {
		return err
	}
	w := c.App.Writer
	if len(st.Pending) == 0 {
		fmt.Fprintf(w, "no pending requests (approval mode: %s)\n", st.Mode)
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tMETHOD\tCHAIN ID\tNAME\tRPC URLS\tCHANGES\tEXPIRES IN")
	for _, a := range st.Pending {
		change := "new chain"
		if a.Previous != nil {
			change = "replaces " + a.Previous.ChainName
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, a.Method, a.Chain.ChainID, a.Chain.ChainName,
			strings.Join(a.Chain.RPCURLs, " "), change, a.Expires.Sub(st.Now).Round(time.Second))
	}
	return tw.Flush()
}

func walletChains(c *cli.Context) error {
	st, err := walletState(c)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\tCHAIN ID\tNAME\tSYMBOL\tRPC URLS")
	for _, ch := range st.Chains {
		mark := ""
		if ch.ChainID == st.Selected {
			mark = "*"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", mark, ch.ChainID, ch.ChainName, ch.NativeCurrency.Symbol, strings.Join(ch.RPCURLs, " "))
	}
	return tw.Flush()
}

func walletDecide(action string) cli.ActionFunc {
	return func(c *cli.Context) error {
		args, err := trailingRPCFlag(c)
		if err != nil {
			return err
		}
		if len(args) != 1 {
			return cli.Exit(fmt.Sprintf("preconf wallet %s: want exactly one request ID (see `preconf wallet pending`)", action), 2)
		}
		id := args[0]
		var res struct {
			ID       string `json:"id"`
			Approved bool   `json:"approved"`
		}
		if err := walletCall(c, http.MethodPost, "/wallet/approvals/"+url.PathEscape(id)+"/"+action, &res); err != nil {
			return err
		}
		verb := "rejected"
		if res.Approved {
			verb = "approved"
		}
		fmt.Fprintf(c.App.Writer, "%s %s\n", verb, res.ID)
		return nil
	}
}
