# libdexagents: GNU Make build. The version comes from include/dexagents/version.h.
VERSION_H := include/dexagents/version.h
MAJOR := $(shell sed -n 's/^\#define DEXA_VERSION_MAJOR \([0-9]*\)/\1/p' $(VERSION_H))
MINOR := $(shell sed -n 's/^\#define DEXA_VERSION_MINOR \([0-9]*\)/\1/p' $(VERSION_H))
PATCH := $(shell sed -n 's/^\#define DEXA_VERSION_PATCH \([0-9]*\)/\1/p' $(VERSION_H))
VERSION := $(MAJOR).$(MINOR).$(PATCH)

CC ?= cc
OPT ?= -O2 -g
WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
CFLAGS_ALL := -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) -fPIC -fvisibility=hidden \
  -DBUILDING_DEXAGENTS -Iinclude -Isrc $(CFLAGS)
LIBS := -lcjson -lsqlite3 -lpthread -lm

BUILD ?= build
SRCS := $(sort $(wildcard src/*/*.c))
OBJS := $(SRCS:%.c=$(BUILD)/%.o)
DEPS := $(OBJS:.o=.d)

SONAME := libdexagents.so.$(MAJOR)
SHLIB := lib/libdexagents.so.$(VERSION)
STLIB := lib/libdexagents.a
MAP := lib/libdexagents.map

.PHONY: all clean
all: $(SHLIB) $(STLIB)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(SHLIB): $(OBJS) $(MAP)
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script,$(MAP) -Wl,--no-undefined \
	  -o $@ $(OBJS) $(LIBS) $(LDFLAGS)
	ln -sf libdexagents.so.$(VERSION) lib/$(SONAME)
	ln -sf $(SONAME) lib/libdexagents.so

$(STLIB): $(OBJS)
	rm -f $@
	ar rcs $@ $(OBJS)

clean:
	rm -rf $(BUILD) lib/libdexagents.so* $(STLIB)

-include $(DEPS)
