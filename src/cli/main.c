/* dexagents: the operator's command for durable agent sessions (see
 * dexagents(1)). One configuration for every subcommand; --help for each;
 * the exit codes of cli.h. */
#include <string.h>

#include "cli/cli.h"

#define GLOBALS                                                                               \
  "Options of every subcommand: --config FILE (or $DEX_AGENT_CONFIG), --store URI (or\n"      \
  "$DEX_AGENT_STORE), --json (output for scripts), --color auto|always|never, --help.\n"

typedef struct command {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *usage;
} command;

static const command COMMANDS[] = {
    {"chat", cmd_chat,
     "usage: dexagents chat [--model NAME] [--mcp-config FILE] [--resume ID] [--threads N]\n"
     "Chats with one session in the terminal. Every line is a message (end a line with '\\'\n"
     "to go on); lines starting with ':' are commands: :approve [NOTE], :reject [NOTE],\n"
     ":answer TEXT, :stop, :steer [ID], :delete [ID], :queue, :plan TEXT, :execute, :graph,\n"
     ":help, :quit. Input is read while a turn runs and while a timer is waited for, so\n"
     ":stop and :steer act at once (from a pipe, each line is taken once the session\n"
     "settles: the turn ended, or it waits for you or a timer).\n"},
    {"sessions", cmd_sessions,
     "usage: dexagents sessions list [--limit N]\n"
     "       dexagents sessions start [--model NAME] [--id ID]\n"
     "       dexagents sessions show ID [--messages N]\n"
     "       dexagents sessions events ID [--follow] [--from TOKEN]\n"
     "list: the store's sessions, newest first. start: a new session. show: its snapshot\n"
     "(turn, plan, what waits, the queue, the newest messages). events: its AgentEvents from\n"
     "the oldest retained one (or after TOKEN); --follow waits for more until interrupted.\n"
     "With --json: the documents of the library (events: {\"events\",\"token\"}, or with\n"
     "--follow one {\"token\",\"event\"} per line).\n"},
    {"send", cmd_send,
     "usage: dexagents send ID TEXT... [--plan] [--wait] [--timeout SECONDS]\n"
     "Sends a message (queued while a turn runs). --plan: in plan mode. --wait: run the\n"
     "session's Steps in this process until it is idle (else a worker or serve runs them).\n"},
    {"approve", cmd_decide,
     "usage: dexagents approve ID [--call CALL_ID] [--note TEXT] [--wait] [--timeout SECONDS]\n"
     "Approves a tool call that waits for approval (the oldest one without --call).\n"},
    {"reject", cmd_decide,
     "usage: dexagents reject ID [--call CALL_ID] [--note TEXT] [--wait] [--timeout SECONDS]\n"
     "Rejects a tool call that waits for approval (the oldest one without --call).\n"},
    {"answer", cmd_answer,
     "usage: dexagents answer ID TEXT... [--call CALL_ID] [--wait] [--timeout SECONDS]\n"
     "Answers a question of the session (the oldest one without --call).\n"},
    {"steer", cmd_queue_op,
     "usage: dexagents steer ID [MESSAGE_ID] [--wait] [--timeout SECONDS]\n"
     "Steers with a queued message (the newest without MESSAGE_ID): the running turn ends\n"
     "at its next safe point and a new one starts with it.\n"},
    {"delete", cmd_queue_op,
     "usage: dexagents delete ID MESSAGE_ID\n"
     "Deletes a queued message.\n"},
    {"stop", cmd_stop,
     "usage: dexagents stop ID [--wait] [--timeout SECONDS]\n"
     "Stops the running turn (cancel_turn).\n"},
    {"end", cmd_end,
     "usage: dexagents end ID [--reason TEXT]\n"
     "Ends the session for good (end_session): running Steps are cancelled, waits end, and\n"
     "later changes are refused; it stays readable until its retention passes.\n"},
    {"execute-plan", cmd_execute_plan,
     "usage: dexagents execute-plan ID [--revision N] [--wait] [--timeout SECONDS]\n"
     "Runs the reviewed plan (its current revision without --revision).\n"},
    {"serve", cmd_serve,
     "usage: dexagents serve [--listen HOST:PORT] [--ui DIR] [--threads N]\n"
     "       [--allowed-hosts NAMES] [--idle-timeout SECONDS] [--max-connections N]\n"
     "       [--max-connections-per-client N] [--mcp-tokens FILE] [--oauth-redirect URL]\n"
     "The AI Agent web app: the page and the agent routes at\n"
     "http://HOST:PORT/products/ai-agent/ (DEX_AGENT_LISTEN, default 127.0.0.1:8080), with\n"
     "worker threads. DEX_AGENT_SESSION_KEY signs session tokens (random when unset).\n"
     "Connections: idle timeout (30 s), header and body timeout (requestTimeoutMs), at most\n"
     "512 at once and 64 per client; a Host header that is not the listen address or one of\n"
     "--allowed-hosts (DEX_AGENT_ALLOWED_HOSTS) gets 421. MCP sign-ins come back to\n"
     "PREFIX/oauth/callback (--oauth-redirect, DEX_AGENT_OAUTH_REDIRECT); their tokens go\n"
     "to --mcp-tokens (DEX_AGENT_MCP_TOKENS, else the library's default file).\n"},
    {"worker", cmd_worker,
     "usage: dexagents worker [--threads N] [--drain-timeout SECONDS]\n"
     "Runs the store's Steps and nothing else (any store URI the runtime takes). SIGTERM or\n"
     "SIGINT drains: no new Step starts, running ones finish (a second signal or the drain\n"
     "timeout, default 60 s, ends it at once: other workers resume those Steps).\n"},
    {"graph", cmd_graph,
     "usage: dexagents graph [--session ID] [--format json|dot|mermaid]\n"
     "The session flow as a graph (nodes: Steps, RPCs, channels; edges: next Steps,\n"
     "recovery, publishes, waits); with --session, that session's Steps and waits on it.\n"
     "Default format: JSON with --json, else DOT.\n"},
    {"store", cmd_store,
     "usage: dexagents store check [URI]\n"
     "       dexagents store vacuum [URI]\n"
     "       dexagents store copy SRC DST\n"
     "check: the store's consistency (exit 6 when it has problems). vacuum: gives free\n"
     "space back. copy: every session of SRC into DST (for example into PostgreSQL); run\n"
     "them with no worker on the stores. URI defaults to the configured store.\n"},
};

#define NCOMMANDS (sizeof COMMANDS / sizeof COMMANDS[0])

static const command *find(const char *name) {
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (strcmp(COMMANDS[i].name, name) == 0) return &COMMANDS[i];
  return NULL;
}

const char *cli_usage(const char *cmd) {
  const command *c = find(cmd);
  return c ? c->usage : NULL;
}

void cli_print_usage(const char *cmd, FILE *f) {
  const char *u = cli_usage(cmd);
  if (u) fputs(u, f);
  fputs(GLOBALS, f);
}

static void overview(FILE *f) {
  fputs("usage: dexagents [--version] [--help] SUBCOMMAND [OPTIONS]\n"
        "Durable AI-agent sessions on libdexagents: chat with them, look at them, act on\n"
        "them, serve the AI Agent web app, run workers, draw the session graph, check and\n"
        "copy stores.\n\nsubcommands:\n",
        f);
  for (size_t i = 0; i < NCOMMANDS; i++) {
    const char *u = COMMANDS[i].usage + strlen("usage: ");
    fprintf(f, "  %.*s\n", (int)strcspn(u, "\n"), u);
  }
  fputs("\n" GLOBALS
        "Exit status: 0 done, 1 failed, 2 usage, 3 configuration, 4 not found, 5 refused by\n"
        "the session, 6 store, 7 timed out. See dexagents(1).\n",
        f);
}

/* "features: core flow ... sqlite": dexa_build_info's list (see dexa_build_has(3)). */
static void print_features(FILE *f) {
  const char *info = dexa_build_info();
  cJSON *doc = cJSON_Parse(info);
  cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "features");
  fputs("features:", f);
  const cJSON *it;
  cJSON_ArrayForEach(it, list) if (cJSON_IsString(it)) fprintf(f, " %s", it->valuestring);
  fputc('\n', f);
  cJSON_Delete(doc);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    overview(stderr);
    return CLI_USAGE;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
    printf("dexagents %s (libdexagents %s)\n", DEXA_VERSION_STRING, dexa_version());
    print_features(stdout);
    return CLI_OK;
  }
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
    if (argc > 2 && find(argv[2])) cli_print_usage(argv[2], stdout);
    else overview(stdout);
    return CLI_OK;
  }
  const command *c = find(cmd);
  if (!c) {
    fprintf(stderr, "dexagents: unknown subcommand %s\n", cmd);
    overview(stderr);
    return CLI_USAGE;
  }
  for (int i = 2; i < argc && strcmp(argv[i], "--") != 0; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      cli_print_usage(cmd, stdout);
      return CLI_OK;
    }
  }
  return c->run(argc, argv);
}
