/* tether's subjects called by the official NATS C client (Debian's libnats-dev), as a
 * service outside tether would call them. The bodies come from the test, built from
 * `tether contracts`' JSON Schemas. Each answer is printed as one line:
 *
 *   <what> TAB <Tether-Problem header, or "-"> TAB <body, or the error>
 *
 *   interop <url> <gateway password> <audit password> <principal> <create> <unknown>
 */
#include <nats/nats.h>
#include <stdio.h>
#include <string.h>

static void ask(natsConnection *nc, const char *what, const char *subject,
                const char *principal, const char *body) {
    natsMsg *request = NULL, *reply = NULL;
    const char *problem = NULL;
    natsMsg_Create(&request, subject, NULL, body, (int)strlen(body));
    natsMsgHeader_Set(request, "Tether-Principal", principal);
    natsStatus s = natsConnection_RequestMsg(&reply, nc, request, 10000);
    if (s != NATS_OK) {
        printf("%s\t-\terror: %s\n", what, natsStatus_GetText(s));
    } else {
        if (natsMsgHeader_Get(reply, "Tether-Problem", &problem) != NATS_OK) problem = "-";
        printf("%s\t%s\t%.*s\n", what, problem, natsMsg_GetDataLength(reply),
               natsMsg_GetData(reply));
    }
    natsMsg_Destroy(reply);
    natsMsg_Destroy(request);
}

static natsStatus connect_as(natsConnection **nc, const char *url, const char *user,
                             const char *password, const char *inbox) {
    natsOptions *opts = NULL;
    natsOptions_Create(&opts);
    natsOptions_SetURL(opts, url);
    natsOptions_SetUserInfo(opts, user, password);
    natsOptions_SetCustomInboxPrefix(opts, inbox);
    natsOptions_SetMaxReconnect(opts, 0);
    natsStatus s = natsConnection_Connect(nc, opts);
    natsOptions_Destroy(opts);
    return s;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: interop <url> <gateway pw> <audit pw> <principal> <create> "
                        "<unknown>\n");
        return 2;
    }
    const char *url = argv[1], *principal = argv[4];
    natsConnection *nc = NULL;
    natsStatus s = connect_as(&nc, url, "gateway", argv[2], "_INBOX.gateway");
    if (s != NATS_OK) {
        printf("connect\t-\terror: %s\n", natsStatus_GetText(s));
        return 1;
    }
    ask(nc, "created", "tether.rooms.create", principal, argv[5]);
    ask(nc, "unknown_field", "tether.rooms.create", principal, argv[6]);
    ask(nc, "not_json", "tether.rooms.create", principal, "{\"title\":");
    natsConnection_Destroy(nc);

    natsConnection *wrong = NULL;
    s = connect_as(&wrong, url, "gateway", "not-the-password", "_INBOX.gateway");
    printf("wrong_password\t-\t%s\n", s == NATS_OK ? "connected" : natsStatus_GetText(s));
    natsConnection_Destroy(wrong);

    natsConnection *audit = NULL;
    s = connect_as(&audit, url, "audit", argv[3], "_INBOX.audit");
    if (s != NATS_OK) {
        printf("not_a_caller\t-\terror: %s\n", natsStatus_GetText(s));
        return 1;
    }
    ask(audit, "not_a_caller", "tether.rooms.create", principal, argv[5]);
    /* The server refuses the publish itself; the client hears why as the connection's
     * last error. */
    const char *why = NULL;
    natsConnection_GetLastError(audit, &why);
    printf("not_a_caller_why\t-\t%s\n", why ? why : "");
    natsConnection_Destroy(audit);
    nats_Close();
    return 0;
}
