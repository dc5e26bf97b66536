#include <string>
#include <vector>

namespace geo {

constexpr double kPi = 3.14159;

/// A shape with an area.
class Shape {
public:
    virtual ~Shape() = default;
    virtual double area() const = 0;

    struct Style {
        std::string color;
    };
};

template <typename T>
T square(T x) {
    return x * x;
}

// Out-of-class method definition.
double Circle::area() const {
    return kPi * radius * radius;
}

}  // namespace geo

int main() {
    return 0;
}
