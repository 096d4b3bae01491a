/*
 * A C epoll echo server for the busy-server benchmark (bench/busy_server_overhead.py):
 * level-triggered, non-blocking sockets, one epoll_wait per loop iteration (the epoll
 * profile's messages), every read echoed back at once. Prints "listening" when ready.
 *   epoll_echo PORT
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char** argv) {
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  struct epoll_event ev, events[64];
  int listener, ep, one = 1;
  char buf[4096];

  if (argc != 2) return 2;
  addr.sin_port = htons(atoi(argv[1]));
  listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(listener, (struct sockaddr*)&addr, sizeof(addr)) || listen(listener, 128)) {
    perror("bind/listen");
    return 1;
  }
  ep = epoll_create1(0);
  ev.events = EPOLLIN;
  ev.data.fd = listener;
  epoll_ctl(ep, EPOLL_CTL_ADD, listener, &ev);
  printf("listening\n");
  fflush(stdout);
  for (;;) {
    int n = epoll_wait(ep, events, 64, -1);

    for (int i = 0; i < n; i++) {
      int fd = events[i].data.fd;

      if (fd == listener) {
        int c = accept4(listener, NULL, NULL, SOCK_NONBLOCK);

        if (c < 0) continue;
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        ev.events = EPOLLIN;
        ev.data.fd = c;
        epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
        continue;
      }
      ssize_t got = read(fd, buf, sizeof(buf));

      if (got <= 0) {
        close(fd);
        continue;
      }
      if (write(fd, buf, got) != got) close(fd);
    }
  }
}
