/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Child processes of the guest tests: records on pipes, each one write
 * under PIPE_BUF, and a bounded wait for the child's exit, so a child
 * that hangs fails its check instead of the whole test.
 */
#ifndef UZ_GUEST_CHILD_H
#define UZ_GUEST_CHILD_H

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define PIPE_MS		10000	/* longest wait for a record or an exit */

static inline bool pipe_read(int fd, void *buf, size_t len)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, PIPE_MS) == 1 &&
	       read(fd, buf, len) == (ssize_t)len;
}

static inline bool pipe_write(int fd, const void *buf, size_t len)
{
	return write(fd, buf, len) == (ssize_t)len;
}

/* The child's exit status, waiting up to PIPE_MS; -1 if it never came. */
static inline int reap(pid_t pid)
{
	int status, i;

	for (i = 0; i < PIPE_MS / 10; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

#endif /* UZ_GUEST_CHILD_H */
