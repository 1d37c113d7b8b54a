// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * gil-record --metrics [ADDR:]PORT: the recorder's counters (gil_recorder_metrics) served over
 * HTTP for Prometheus to scrape, by libmicrohttpd on a thread of its own. The socket is bound
 * before any probe is placed, so a port in use or an address that cannot be bound is a usage
 * error with nothing left behind; loopback unless an address is given.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util.h"
#include "metrics-http.h"

#ifdef HAVE_MICROHTTPD
#include <microhttpd.h>

struct metrics_http {
	int fd;
	struct MHD_Daemon *daemon;
	struct gil_recorder *rec;
};

static const char index_page[] =
	"<html><head><title>gil-record</title></head><body><h1>gil-record</h1>"
	"<p><a href=\"/metrics\">Metrics</a></p></body></html>\n";

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int status, const char *type,
			     void *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **state)
{
	static const char not_yet[] = "not recording yet\n", not_found[] = "see /metrics\n",
			  bad_method[] = "GET only\n";
	struct metrics_http *h = cls;
	size_t len = 0;
	char *text;

	(void)version;
	(void)upload;
	(void)upload_size;
	(void)state;
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", (void *)bad_method,
			     strlen(bad_method), MHD_RESPMEM_PERSISTENT);
	if (!strcmp(url, "/"))
		return reply(c, MHD_HTTP_OK, "text/html", (void *)index_page, strlen(index_page),
			     MHD_RESPMEM_PERSISTENT);
	if (strcmp(url, "/metrics"))
		return reply(c, MHD_HTTP_NOT_FOUND, "text/plain", (void *)not_found,
			     strlen(not_found), MHD_RESPMEM_PERSISTENT);
	text = h->rec ? gil_recorder_metrics(h->rec, &len) : NULL;
	if (!text)
		return reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain", (void *)not_yet,
			     strlen(not_yet), MHD_RESPMEM_PERSISTENT);
	return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text, len,
		     MHD_RESPMEM_MUST_FREE);
}

/* "9464", "127.0.0.1:9464", "0.0.0.0:9464", "[::1]:9464", "[::]:9464" */
static int parse(const char *spec, struct sockaddr_storage *ss, socklen_t *sl, char *err,
		 size_t errlen)
{
	const char *port = spec, *colon;
	char host[64] = "127.0.0.1";
	char *end;
	long p;
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (spec[0] == '[') {
		colon = strstr(spec, "]:");
		if (!colon || (size_t)(colon - spec - 1) >= sizeof(host))
			goto bad;
		snprintf(host, sizeof(host), "%.*s", (int)(colon - spec - 1), spec + 1);
		port = colon + 2;
	} else if ((colon = strrchr(spec, ':'))) {
		if ((size_t)(colon - spec) >= sizeof(host) || colon == spec)
			goto bad;
		snprintf(host, sizeof(host), "%.*s", (int)(colon - spec), spec);
		port = colon + 1;
	}
	errno = 0;
	p = strtol(port, &end, 10);
	if (errno || end == port || *end || p < 1 || p > 65535)
		goto bad;
	if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)p);
		*sl = sizeof(*in4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)p);
		*sl = sizeof(*in6);
		return 0;
	}
bad:
	return gil_err(err, errlen, "invalid --metrics value '%s': give [ADDR:]PORT, e.g. 9464, 127.0.0.1:9464 or [::1]:9464 (port 1 to 65535, address numeric)",
		       spec);
}

struct metrics_http *metrics_http_bind(const char *spec, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	struct metrics_http *h;
	socklen_t sl = 0;
	int one = 1;

	if (parse(spec, &ss, &sl, err, errlen) < 0)
		return NULL;
	h = calloc(1, sizeof(*h));
	if (!h) {
		gil_err(err, errlen, "out of memory");
		return NULL;
	}
	h->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (h->fd < 0 ||
	    setsockopt(h->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(h->fd, (struct sockaddr *)&ss, sl) < 0 || listen(h->fd, 16) < 0) {
		gil_err(err, errlen, "cannot serve --metrics on %s: %s (%s)", spec, strerror(errno),
			errno == EADDRINUSE ? "choose another port" :
			errno == EADDRNOTAVAIL ? "give an address of this machine" :
						 "choose another address or port");
		if (h->fd >= 0)
			close(h->fd);
		free(h);
		return NULL;
	}
	return h;
}

int metrics_http_start(struct metrics_http *h, struct gil_recorder *rec, char *err,
		       size_t errlen)
{
	h->rec = rec;
	h->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL,
				     NULL, answer, h, MHD_OPTION_LISTEN_SOCKET, h->fd,
				     MHD_OPTION_CONNECTION_LIMIT, 16u,
				     MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
	if (!h->daemon)
		return gil_err(err, errlen, "cannot start the --metrics server: %s",
			       strerror(errno ? errno : EINVAL));
	h->fd = -1; /* the daemon's now */
	return 0;
}

void metrics_http_stop(struct metrics_http *h)
{
	if (!h)
		return;
	if (h->daemon)
		MHD_stop_daemon(h->daemon);
	if (h->fd >= 0)
		close(h->fd);
	free(h);
}

#else /* !HAVE_MICROHTTPD */

struct metrics_http *metrics_http_bind(const char *spec, char *err, size_t errlen)
{
	(void)spec;
	gil_err(err, errlen, "--metrics needs gil-record built with libmicrohttpd (install libmicrohttpd-dev, then configure and make again)");
	return NULL;
}

int metrics_http_start(struct metrics_http *h, struct gil_recorder *rec, char *err,
		       size_t errlen)
{
	(void)h;
	(void)rec;
	return gil_err(err, errlen, "no --metrics server in this build");
}

void metrics_http_stop(struct metrics_http *h)
{
	(void)h;
}
#endif
